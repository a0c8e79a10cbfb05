import Synchronization

/// Scenarios 6 and 7's bound: the ``Floor`` with the subscription promises StateKit makes, and
/// nothing else.
///
/// - A token cancels when released, so it is an object with a `deinit`.
/// - A handler is not called once its cancel has returned, and a write calls its handlers outside
///   the lock, so a write and a cancel share a flag: a second object, the subscriber, which the
///   list holds and the token reaches. (One object cannot be both: the list's reference would
///   keep the token alive, and without it a write could call a subscriber already freed.)
/// - A token keeps no container alive: the subscriber holds the container's storage (its lock,
///   value and list), which the container empties when it goes, not the container. (A weak
///   reference to the container does the same at about 40% more a subscribe and cancel.)
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
        let storage: Storage

        init(_ handler: @escaping Handler, storage: Storage) {
            self.handler = handler
            self.storage = storage
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
            subscriber.storage.remove(subscriber)
        }
    }

    /// What a subscriber reaches: it outlives the container while a token holds a subscriber.
    final class Storage: @unchecked Sendable {
        struct State {
            var value: Value
            var subscribers: [Subscriber] = []
        }

        let state: Mutex<State>

        init(_ value: Value) {
            state = Mutex(State(value: value))
        }

        func remove(_ subscriber: Subscriber) {
            state.withLock { state in
                if let index = state.subscribers.firstIndex(where: { $0 === subscriber }) {
                    state.subscribers.remove(at: index)
                }
            }
        }
    }

    private let storage: Storage

    init(_ value: Value) {
        storage = Storage(value)
    }

    deinit {
        // The subscribers hold the storage: let go of them, or neither is ever freed.
        storage.state.withLock { $0.subscribers.removeAll() }
    }

    var value: Value {
        storage.state.withLock { $0.value }
    }

    func modify(_ newValue: Value) {
        let subscribers = storage.state.withLock { state in
            state.value = newValue
            return state.subscribers
        }
        for subscriber in subscribers where subscriber.active.load(ordering: .acquiring) {
            subscriber.handler(newValue)
        }
    }

    /// Adds `handler` and calls it with the current value. Not inlined into the benchmark, so
    /// that the token is made on the heap, as an app's is, not on the benchmark's stack.
    @inline(never)
    func subscribe(_ handler: @escaping Handler) -> Token {
        let subscriber = Subscriber(handler, storage: storage)
        let current = storage.state.withLock { state in
            state.subscribers.append(subscriber)
            return state.value
        }
        handler(current)
        return Token(subscriber)
    }
}
