/// Hoare's selection (quickselect): the `k`-th smallest of an array in expected linear time,
/// without sorting it or allocating.
enum Quickselect {
    /// The `k`-th smallest value (0-based) of `values`, which it reorders: afterwards no value
    /// before index `k` is larger and none after it is smaller. `values` must not be empty, and
    /// must hold no NaN.
    static func select(_ values: inout ContiguousArray<Double>, k: Int) -> Double {
        precondition(values.indices.contains(k))
        var lo = 0, hi = values.count - 1
        while lo < hi {
            let pivot = values[(lo + hi) / 2]
            var i = lo, j = hi
            while i <= j {
                while values[i] < pivot { i += 1 }
                while values[j] > pivot { j -= 1 }
                if i <= j {
                    values.swapAt(i, j)
                    i += 1
                    j -= 1
                }
            }
            if k <= j { hi = j } else if k >= i { lo = i } else { return values[k] }
        }
        return values[k]
    }
}
