-- wrk script: KIND=upsert posts the pre-made bodies in $BODIES round-robin to /upsert;
-- KIND=publish publishes 100-byte messages under 64 flow-control keys to the receiver $RECV.
local kind = os.getenv("KIND")
local bodies = {}
local counter = 0
if kind == "upsert" then
  local dir = os.getenv("BODIES")
  for i = 0, 199 do
    local f = io.open(dir .. "/" .. i .. ".json", "r")
    bodies[#bodies + 1] = f:read("*a")
    f:close()
  end
end
local recv = os.getenv("RECV")
local payload = string.rep("x", 100)

request = function()
  counter = counter + 1
  if kind == "upsert" then
    local body = bodies[(counter % #bodies) + 1]
    return wrk.format("POST", "/upsert", { ["Authorization"] = "Bearer bench" }, body)
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
