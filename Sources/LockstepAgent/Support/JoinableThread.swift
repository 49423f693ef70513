#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A POSIX thread running `body`, joined with `pthread_join`: the owner waits for it to end
/// without polling (the DNS-SD loop), or detached (the agent's loop, which ends on its own).
enum JoinableThread {
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts `body` on a new thread; nil if the thread could not be created.
    static func start(_ body: @escaping @Sendable () -> Void) -> pthread_t? {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { context in
                let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
                body.run()
                return nil
            }, box)
        guard rc == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            return nil
        }
        return thread
    }

    /// Waits for `thread` to end.
    static func join(_ thread: pthread_t) {
        pthread_join(thread, nil)
    }

    /// Lets `thread` end on its own: no one joins it.
    static func detach(_ thread: pthread_t) {
        pthread_detach(thread)
    }
}
