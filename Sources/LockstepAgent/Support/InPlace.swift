/// Runs `body` on `value` where it is stored, without a copy.
///
/// A method called on an actor's stored struct (`node.nextDeadline(now:)`) works on a copy of the
/// whole struct, retaining every collection inside it and releasing them after: a measurable
/// share of an idle agent's CPU on the queries it makes after every datagram. An `inout` access
/// lends the stored value itself.
@inline(__always)
func inPlace<Value, Result>(_ value: inout Value, _ body: (inout Value) -> Result) -> Result {
    body(&value)
}
