//! How mpibind shares things out (§0.6): `split` into consecutive runs, and its
//! `fill_in_buckets`, which both mapping paths (`greedy.rs`, `hierarchy.rs`) use for slots,
//! a slot's PUs, GPUs and domains.

/// Split `n` things into `k` runs (§0.6): consecutive, the first `n mod k` one longer.
pub(super) fn split(n: usize, k: usize) -> Vec<usize> {
    (0..k).map(|i| n / k + usize::from(i < n % k)).collect()
}

/// mpibind's `fill_in_buckets` (internals.c:107-215): `elems` over `k` buckets. With as many
/// elements as buckets or more, consecutive runs (§0.6); with fewer, the buckets split into runs
/// and run j holds element j alone (its buckets share it). No element: every bucket empty.
pub(super) fn fill_in_buckets<T: Clone>(elems: &[T], k: usize) -> Vec<Vec<T>> {
    if elems.is_empty() {
        return vec![Vec::new(); k];
    }
    if elems.len() >= k {
        let mut it = elems.iter();
        return split(elems.len(), k)
            .into_iter()
            .map(|n| it.by_ref().take(n).cloned().collect())
            .collect();
    }
    elems
        .iter()
        .zip(split(k, elems.len()))
        .flat_map(|(e, n)| std::iter::repeat_n(vec![e.clone()], n))
        .collect()
}
