use std::sync::{Arc, Mutex};

use crate::lock;

#[test]
fn a_poisoned_mutex_is_locked_anyway_with_its_last_value() {
    let shared = Arc::new(Mutex::new(1));
    let inside = Arc::clone(&shared);
    let panicked = std::thread::spawn(move || {
        let mut guard = lock(&inside);
        *guard = 2;
        panic!("poison the lock");
    })
    .join();
    assert!(panicked.is_err());
    assert!(shared.is_poisoned());
    assert_eq!(*lock(&shared), 2);
}
