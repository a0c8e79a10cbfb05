import Synchronization

/// Scenarios 6 and 7's bound: the ``Floor`` with the subscription promises StateKit makes, and
/// nothing else.
///
/// - A token cancels when released, so it is an object with a `deinit`.
/// - A handler is not called once its cancel has returned, and a write calls its handlers outside
///   the lock, so a write and a cancel share a flag: a second object, the subscriber, which the
///   list holds and the token reaches. (One object cannot be both: the list's reference would
///   keep the token alive, and without it a write could call a subscriber already freed.)
/// - A token keeps no container alive: the subscriber holds it weakly.
/// - A new subscriber is called with the current value.
///
/// No ordering of that first call against other deliveries, no re-entrancy handling: what
/// StateKit does beyond these is its own cost.
final class TokenFloor: @unchecked Sendable {
    typealias Value = Int
    typealias Handler = @Sendable (Value) -> Void

    final class Subscriber: @unchecked Sendable {
        let handler: Handler
        let active = Atomic<Bool>(true)
        weak var owner: TokenFloor?

        init(_ handler: @escaping Handler, owner: TokenFloor) {
            self.handler = handler
            self.owner = owner
        }
    }

    final class Token: @unchecked Sendable {
        let subscriber: Subscriber

        init(_ subscriber: Subscriber) {
            self.subscriber = subscriber
        }

        deinit {
            cancel()
        }

        func cancel() {
            guard subscriber.active.exchange(false, ordering: .acquiringAndReleasing) else { return }
            subscriber.owner?.remove(subscriber)
        }
    }

    private struct Storage {
        var value: Value
        var subscribers: [Subscriber] = []
    }

    private let storage: Mutex<Storage>

    init(_ value: Value) {
        storage = Mutex(Storage(value: value))
    }

    var value: Value {
        storage.withLock { $0.value }
    }

    func modify(_ newValue: Value) {
        let subscribers = storage.withLock { storage in
            storage.value = newValue
            return storage.subscribers
        }
        for subscriber in subscribers where subscriber.active.load(ordering: .acquiring) {
            subscriber.handler(newValue)
        }
    }

    /// Adds `handler` and calls it with the current value. Not inlined into the benchmark, so
    /// that the token is made on the heap, as an app's is, not on the benchmark's stack.
    @inline(never)
    func subscribe(_ handler: @escaping Handler) -> Token {
        let subscriber = Subscriber(handler, owner: self)
        let current = storage.withLock { storage in
            storage.subscribers.append(subscriber)
            return storage.value
        }
        handler(current)
        return Token(subscriber)
    }

    private func remove(_ subscriber: Subscriber) {
        storage.withLock { storage in
            if let index = storage.subscribers.firstIndex(where: { $0 === subscriber }) {
                storage.subscribers.remove(at: index)
            }
        }
    }
}
