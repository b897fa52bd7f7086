//! Loading and saving the flow-control snapshot, so waiting messages survive a restart.

use std::io::Write as _;
use std::path::Path;

use flowvec::flow::{FlowConfig, FlowControl, FlowSnapshot, SharedFlowControl, Timestamp};
use flowvec::wire::Message;

/// The engine from `path` if it exists (its active messages are waiting again: their calls
/// were lost with the previous process), else a new one with `config`. A file that does not
/// parse is an error: the server refuses to start rather than overwrite it on exit.
pub(crate) fn load(
    path: &Path,
    config: FlowConfig,
    now: Timestamp,
) -> Result<SharedFlowControl<Message>, String> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(SharedFlowControl::new(config));
        }
        Err(err) => return Err(format!("cannot read snapshot {}: {err}", path.display())),
    };
    let snapshot: FlowSnapshot<Message> = serde_json::from_slice(&text)
        .map_err(|err| format!("snapshot {} is not valid: {err}", path.display()))?;
    let mut engine = FlowControl::restore(snapshot, now)
        .map_err(|err| format!("snapshot {} is inconsistent: {err}", path.display()))?;
    engine.set_global_parallelism(config.global_parallelism);
    Ok(SharedFlowControl::from_engine(engine))
}

/// Writes the engine's snapshot to `path` atomically (a temporary file renamed over it).
/// Returns the number of messages saved.
pub(crate) fn save(flow: &SharedFlowControl<Message>, path: &Path) -> Result<usize, String> {
    let (json, messages) = {
        let engine = flow.lock();
        let messages = engine.waiting_count() + engine.active_count();
        (serde_json::to_vec(&engine.snapshot()), messages)
    };
    let json = json.map_err(|err| format!("cannot serialise snapshot: {err}"))?;
    let tmp = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&json)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|err| format!("cannot write snapshot {}: {err}", path.display()))?;
    Ok(messages)
}
