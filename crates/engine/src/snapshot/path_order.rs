//! Ordering a snapshot's file lists by path without holding them twice: a large table's list is
//! a million entries of 200 bytes each, so sorting and merging move entries in place (or each at
//! most twice), never through a second full list.

/// Merges `later` (ordered by path) into `base` (ordered by path) in place, stably: on equal paths
/// `base`'s entries come first. `base` grows by `later.len()` placeholder slots, filled from the
/// back, so each entry moves at most once and the list is never copied whole.
pub fn merge_sorted_into<T: Default>(
    base: &mut Vec<T>,
    mut later: Vec<T>,
    path: impl Fn(&T) -> &String,
) {
    if later.is_empty() {
        return;
    }
    let n = base.len();
    base.reserve_exact(later.len());
    base.resize_with(n + later.len(), T::default);
    // Invariant: base[..unplaced] are base entries not yet moved, base[unplaced..free] are
    // placeholders, base[free..] is final.
    let mut unplaced = n;
    let mut free = base.len();
    while let Some(l) = later.pop() {
        while unplaced > 0 && base.get(unplaced - 1).is_some_and(|a| path(a) > path(&l)) {
            base.swap(unplaced - 1, free - 1);
            unplaced -= 1;
            free -= 1;
        }
        free -= 1;
        if let Some(slot) = base.get_mut(free) {
            *slot = l;
        }
    }
}

/// `items` ordered by path (stable). Sorts an index permutation and moves each item twice (into a
/// slot, out in order): sorting the actions themselves would move these large structs O(n log n)
/// times (measured: a quarter of a 100k-file snapshot load).
pub fn sorted_by_path<T>(items: impl Iterator<Item = T>, path: impl Fn(&T) -> &String) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.map(Some).collect();
    let key = |i: usize| slots.get(i).and_then(Option::as_ref).map(&path);
    let mut order: Vec<usize> = (0..slots.len()).collect();
    order.sort_by(|&a, &b| key(a).cmp(&key(b)));
    order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// Orders `items` by path (stable) in place: sorts an index permutation, then applies it cycle by
/// cycle with swaps, so a checkpoint's million entries are neither moved O(n log n) times nor held
/// twice.
pub fn sort_by_path_in_place<T>(items: &mut [T], path: impl Fn(&T) -> &String) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items.get(a).map(&path).cmp(&items.get(b).map(&path)));
    // Position j receives the entry at order[j]; follow each cycle once.
    let mut done = vec![false; items.len()];
    for start in 0..items.len() {
        if done.get(start).copied().unwrap_or(true) {
            continue;
        }
        let mut j = start;
        loop {
            if let Some(d) = done.get_mut(j) {
                *d = true;
            }
            let Some(&src) = order.get(j) else { break };
            if src == start {
                break;
            }
            items.swap(j, src);
            j = src;
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests slice lists they built
mod tests {
    use super::*;

    /// The in-place sort of `items` equals a stable sort, and merging its split at `cut` (each
    /// side sorted) equals the stable sort of both, the base's entry first on ties.
    fn assert_sort_and_merge(items: &[(String, u32)], cut: usize) {
        let stable = |v: &[(String, u32)]| {
            let mut v = v.to_vec();
            v.sort_by(|x, y| x.0.cmp(&y.0));
            v
        };
        let mut got = items.to_vec();
        sort_by_path_in_place(&mut got, |e| &e.0);
        assert_eq!(got, stable(items));
        let (mut base, later) = (stable(&items[..cut]), stable(&items[cut..]));
        let want = stable(&[base.clone(), later.clone()].concat());
        merge_sorted_into(&mut base, later, |e| &e.0);
        assert_eq!(base, want, "cut {cut} of {items:?}");
    }

    #[test]
    fn in_place_sort_and_merge_equal_a_stable_sort() {
        let items: Vec<(String, u32)> = ["c", "a", "b", "a", "c", "b", "d"]
            .iter()
            .enumerate()
            .map(|(i, p)| (p.to_string(), i as u32))
            .collect();
        for cut in 0..=items.len() {
            assert_sort_and_merge(&items, cut);
        }
    }

    /// The same on many pseudo-random lists with repeated paths (a fixed LCG: deterministic).
    #[test]
    fn in_place_sort_and_merge_on_random_lists() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % m
        };
        for _ in 0..300 {
            let len = next(40) as usize;
            let items: Vec<(String, u32)> = (0..len)
                .map(|i| (format!("p{}", next(8)), i as u32))
                .collect();
            let cut = next(len as u64 + 1) as usize;
            assert_sort_and_merge(&items, cut);
        }
    }

    #[test]
    fn sorted_by_path_is_a_stable_sort() {
        let items: Vec<(String, u32)> = ["b", "a", "c", "a", "b"]
            .iter()
            .enumerate()
            .map(|(i, p)| (p.to_string(), i as u32))
            .collect();
        let mut want = items.clone();
        want.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(sorted_by_path(items.into_iter(), |x| &x.0), want);
        assert!(sorted_by_path(Vec::<(String, u32)>::new().into_iter(), |x| &x.0).is_empty());
    }
}
