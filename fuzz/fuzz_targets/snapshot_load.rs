//! `Index::load` on arbitrary bytes: no panic, and no allocation beyond what the input can
//! justify (libFuzzer's `-rss_limit_mb` and `-malloc_limit_mb` catch a length field trusted
//! blindly). A snapshot that does load must save back to a snapshot that loads to the same
//! bytes (load-save is canonical).
#![no_main]

use flowvec::vector::Index;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reader = data;
    if let Ok(index) = Index::load(&mut reader) {
        let mut saved = Vec::new();
        index.save(&mut saved).expect("saving to a Vec cannot fail");
        let again = Index::load(saved.as_slice()).expect("a saved snapshot loads");
        let mut resaved = Vec::new();
        again
            .save(&mut resaved)
            .expect("saving to a Vec cannot fail");
        assert_eq!(saved, resaved);
    }
});
