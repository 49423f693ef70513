extension Sequence where Element == Double {
    /// √(Σ xᵢ²): the bound of a sum of independent errors with these bounds, at the same
    /// confidence (``OffsetEstimate/composed(with:at:)``, ``MeshClock``).
    var rootSumSquare: Double {
        reduce(0) { $0 + $1 * $1 }.squareRoot()
    }
}
