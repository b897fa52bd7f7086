//! The command log's cost on this machine's disk: what one durable commit costs with redb
//! (the log's store) against the floor, a plain file append + `fdatasync`, for single entries
//! and for group commits of 32. Prints commits/s and entries/s.
//!
//! ```text
//! cargo run --release -p flowvec-server --example log_bench [-- DIR]
//! ```

use std::io::Write as _;
use std::time::{Duration, Instant};

use redb::{Database, Durability, TableDefinition};

const LOG: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("log");
const RUN: Duration = Duration::from_secs(3);

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(std::env::temp_dir, std::path::PathBuf::from)
        .join(format!("flowvec-log-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a writable directory");
    let entry = vec![7u8; 1024];
    println!(
        "entry 1 KiB, {} s per row, directory {}",
        RUN.as_secs(),
        dir.display()
    );
    println!("| store | entries per commit | commits/s | entries/s |");
    println!("|---|---|---|---|");
    for batch in [1usize, 32] {
        // The floor: append to a plain file and fdatasync.
        let path = dir.join(format!("plain-{batch}.log"));
        let mut file = std::fs::File::create(&path).expect("create");
        let (commits, started) = (0u64, Instant::now());
        let mut commits = commits;
        while started.elapsed() < RUN {
            for _ in 0..batch {
                file.write_all(&entry).expect("write");
            }
            file.sync_data().expect("fdatasync");
            commits += 1;
        }
        report("plain file + fdatasync", batch, commits, started.elapsed());

        let path = dir.join(format!("redb-{batch}.redb"));
        let db = Database::create(&path).expect("redb");
        let (mut commits, mut index, started) = (0u64, 0u64, Instant::now());
        while started.elapsed() < RUN {
            let mut tx = db.begin_write().expect("tx");
            tx.set_durability(Durability::Immediate);
            {
                let mut table = tx.open_table(LOG).expect("table");
                for _ in 0..batch {
                    index += 1;
                    table.insert(index, entry.as_slice()).expect("insert");
                }
            }
            tx.commit().expect("commit");
            commits += 1;
        }
        report(
            "redb, Durability::Immediate",
            batch,
            commits,
            started.elapsed(),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn report(store: &str, batch: usize, commits: u64, took: Duration) {
    let per_sec = commits as f64 / took.as_secs_f64();
    println!(
        "| {store} | {batch} | {per_sec:.0} | {:.0} |",
        per_sec * batch as f64
    );
}
