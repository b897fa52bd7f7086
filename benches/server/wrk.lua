-- wrk script: KIND=upsert posts the pre-made bodies in $BODIES round-robin to /upsert;
-- KIND=publish publishes 100-byte messages under 64 flow-control keys to the receiver $RECV;
-- KIND=query posts the query bodies q<i>.json (top-10) round-robin to /query. With PORTS
-- (comma-separated), each connection goes to one of them in turn (queries spread over nodes).
local kind = os.getenv("KIND")
local bodies = {}
local counter = 0
if kind == "upsert" or kind == "query" then
  local dir = os.getenv("BODIES")
  local prefix = (kind == "query") and "q" or ""
  for i = 0, 199 do
    local f = io.open(dir .. "/" .. prefix .. i .. ".json", "r")
    bodies[#bodies + 1] = f:read("*a")
    f:close()
  end
end
local recv = os.getenv("RECV")
local payload = string.rep("x", 100)

request = function()
  counter = counter + 1
  if kind == "upsert" or kind == "query" then
    local body = bodies[(counter % #bodies) + 1]
    return wrk.format("POST", "/" .. kind, { ["Authorization"] = "Bearer bench" }, body)
  end
  local key = "k" .. (counter % 64)
  return wrk.format("POST", "/v2/publish/http://127.0.0.1:" .. recv .. "/hook", {
    ["Authorization"] = "Bearer bench",
    ["Upstash-Flow-Control-Key"] = key,
    ["Upstash-Flow-Control-Value"] = "parallelism=4",
  }, payload)
end

response = function(status, headers, body)
  if status >= 300 then
    io.stderr:write("HTTP " .. status .. ": " .. body .. "\n")
  end
end

-- PORTS: give each connection (thread) one of the listed ports, round-robin.
local ports = os.getenv("PORTS")
if ports then
  local list = {}
  for p in string.gmatch(ports, "[^,]+") do list[#list + 1] = p end
  local next_port = 0
  setup = function(thread)
    next_port = next_port + 1
    local port = list[((next_port - 1) % #list) + 1]
    thread.addr = wrk.lookup("127.0.0.1", port)[1]
  end
end
