import LockstepCore
import Logging

extension Agent {
    /// Lets go of the pages the agent no longer uses (``ResidentPages``) after `delay`, then
    /// every ``ResidentPages/trimInterval``: what start-up touched first, then what a group
    /// forming or a rare request touched since. The trim runs on a thread of its own: it takes
    /// 8–16 ms, which the agent's thread would otherwise spend away from its socket and timers.
    func scheduleTrim(after delay: TimeSpan) {
        guard !stopped else { return }
        trimTimer = loop.schedule(at: hostTime(now() + delay)) { [self] in
            assumeIsolated { agent in
                agent.trimTimer = nil
                let logger = agent.logger
                let thread = JoinableThread.start {
                    let started = ContinuousClock.now
                    let trimmed = ResidentPages.trim()
                    let took = ContinuousClock.now - started
                    if let why = trimmed.skipped {
                        logger.debug("resident pages kept", metadata: ["reason": "\(why)"])
                    } else {
                        logger.debug("resident pages let go of", metadata: [
                            "pages.mappings": "\(trimmed.mappings)", "pages.bytes": "\(trimmed.bytes)", "pages.took": "\(took)",
                        ])
                    }
                }
                if let thread {
                    JoinableThread.detach(thread)
                } else {
                    logger.debug("resident pages kept", metadata: ["reason": "no thread for the trim (pthread_create failed)"])
                }
                agent.scheduleTrim(after: ResidentPages.trimInterval)
            }
        }
    }
}
