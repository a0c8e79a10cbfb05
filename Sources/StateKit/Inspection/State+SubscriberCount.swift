extension State {
    /// How many subscribers and projection groups the container holds; tests use it (through
    /// `@testable import`) to prove that cancelled subscriptions and released projections leave nothing behind.
    var subscriberCount: Int {
        lock.withLock { audience.subscribers.count + audience.projections.count }
    }
}
