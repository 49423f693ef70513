import LockstepPlayerProtocol

/// A JSON value as mpv sends and takes it: the `data` of a reply or an event, an argument of a
/// command. mpv prints numbers of `double` properties with a decimal point (`"time-pos":10.000000`)
/// and integer properties without, but a reader should not rely on that: ``JSONValue/double``
/// accepts both.
public typealias MPVValue = JSONValue
