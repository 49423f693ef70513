import Testing

extension Tag {
    /// Tests that run simulated networks for simulated minutes: the slowest of the core's (a few
    /// seconds in all). The same scenarios over many seeds are `lockstep-bench scenarios`.
    @Tag static var simulation: Self
}
