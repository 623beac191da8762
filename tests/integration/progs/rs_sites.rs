// rs_sites: a Rust program for tests/integration/rust_sites_test.sh. Each
// function allocates through the standard library (Box, Vec, String,
// format!, HashMap, iterator collect with a closure); those whose bytes
// follow from the code alone write "expect NAME BYTES" to the file named
// by the first argument, the others "named NAME". Run at rate 1, the
// report must name each function as its site: Rust's allocation machinery
// (alloc::, hashbrown::, __rust_alloc, and the library's inlined frames)
// is skipped at the leaf end.
use std::collections::HashMap;
use std::env;
use std::fs::File;
use std::io::Write;
use std::mem::size_of;

// A read the optimiser cannot remove (std::hint::black_box needs Rust
// 1.66; Debian 12 has 1.63).
fn observe<T>(v: &Vec<T>) {
    unsafe {
        std::ptr::read_volatile(&v.len());
    }
}

// n boxes of 200 bytes, in a vector made to measure
#[inline(never)]
fn make_boxes(n: usize) -> Vec<Box<[u8; 200]>> {
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        v.push(Box::new([i as u8; 200]));
    }
    v
}

// n strings of capacity 100, in a vector made to measure
#[inline(never)]
fn make_strings(n: usize) -> Vec<String> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let mut s = String::with_capacity(100);
        s.push('x');
        v.push(s);
    }
    v
}

// a closure's boxes, collected from an iterator that knows its length:
// n * 8 bytes of boxes (in the closure, or in this function when the
// closure is inlined) and n * 8 of vector
// (the read after the collect keeps this function's frame: returning
// collect()'s result directly is a tail call, which leaves the caller as
// the site)
#[inline(never)]
fn closure_boxes(n: usize) -> Vec<Box<u64>> {
    let v: Vec<Box<u64>> = (0..n as u64).map(|i| Box::new(i * 7)).collect();
    observe(&v);
    v
}

// sizes chosen by the library: named, not counted
#[inline(never)]
fn format_names(n: usize) -> Vec<String> {
    let v: Vec<String> = (0..n).map(|i| format!("name-{:06}", i)).collect();
    observe(&v);
    v
}

#[inline(never)]
fn make_map(n: usize) -> HashMap<u64, u64> {
    let mut m = HashMap::new();
    for i in 0..n as u64 {
        m.insert(i, i * 3);
    }
    m
}

#[inline(never)]
fn grow_vec(n: usize) -> Vec<u64> {
    let mut v = Vec::new();
    for i in 0..n as u64 {
        v.push(i);
    }
    v
}

fn main() {
    let path = env::args().nth(1).expect("usage: rs_sites EXPECT_FILE");
    let n = 3000;
    let b = make_boxes(n);
    let s = make_strings(n);
    let c = closure_boxes(n);
    let f = format_names(n);
    let m = make_map(n);
    let g = grow_vec(n);
    observe(&b);
    observe(&s);
    observe(&c);
    observe(&f);
    observe(&g);
    unsafe {
        std::ptr::read_volatile(&m.len());
    }
    let mut out = File::create(path).expect("cannot create the expectations file");
    let lines = [
        format!("expect make_boxes {}", n * (size_of::<Box<[u8; 200]>>() + 200)),
        format!("expect make_strings {}", n * (size_of::<String>() + 100)),
        format!("expect closure_boxes {}", n * (size_of::<Box<u64>>() + 8)),
        "named format_names".to_string(),
        "named make_map".to_string(),
        "named grow_vec".to_string(),
    ];
    for l in lines.iter() {
        writeln!(out, "{}", l).expect("cannot write the expectations");
    }
}
