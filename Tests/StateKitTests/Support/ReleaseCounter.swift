import Synchronization

/// Counts the deallocations of the ``CountedRelease`` objects made with it.
final class ReleaseCounter: Sendable {
    let count = Atomic<Int>(0)
}

/// Something a handler captures, to see when the container lets go of it: tells its counter when
/// it goes.
final class CountedRelease: Sendable {
    let counter: ReleaseCounter

    init(_ counter: ReleaseCounter) {
        self.counter = counter
    }

    func touch() {}

    deinit {
        counter.count.add(1, ordering: .releasing)
    }
}
