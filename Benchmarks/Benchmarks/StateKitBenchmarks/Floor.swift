import Synchronization

/// The floor: the least a thread-safe, subscribable container can do.
///
/// A final class holding the value and an array of closures behind one `Mutex`; a write swaps the
/// value and copies the closures under the lock, then calls them outside it. No ordering guarantees,
/// no re-entrancy handling, no projections: every StateKit ratio is measured against this.
final class Floor<Value: Sendable>: @unchecked Sendable {
    typealias Handler = @Sendable (Value) -> Void

    private struct Storage {
        var value: Value
        var handlers: [(id: Int, body: Handler)] = []
        var nextID = 0
    }

    private let storage: Mutex<Storage>

    init(_ value: Value) {
        storage = Mutex(Storage(value: value))
    }

    var value: Value {
        storage.withLock { $0.value }
    }

    func modify(_ newValue: Value) {
        let handlers = storage.withLock { storage in
            storage.value = newValue
            return storage.handlers
        }
        for handler in handlers { handler.body(newValue) }
    }

    /// Atomic read-modify-write, then notifies with the new value.
    func modify(_ body: (inout Value) -> Void) {
        let (value, handlers) = storage.withLock { storage in
            body(&storage.value)
            return (storage.value, storage.handlers)
        }
        for handler in handlers { handler.body(value) }
    }

    /// Adds `handler`; returns the id that ``cancel(_:)`` takes.
    func subscribe(_ handler: @escaping Handler) -> Int {
        storage.withLock { storage in
            let id = storage.nextID
            storage.nextID += 1
            storage.handlers.append((id, handler))
            return id
        }
    }

    func cancel(_ id: Int) {
        storage.withLock { storage in
            if let index = storage.handlers.firstIndex(where: { $0.id == id }) {
                storage.handlers.remove(at: index)
            }
        }
    }
}

/// The floor's projection: remembers the last part it saw and calls its handler only on a change.
final class FloorProjection<Root, Part: Equatable>: @unchecked Sendable {
    private let read: @Sendable (Root) -> Part
    private let handler: @Sendable (Part) -> Void
    private var last: Part

    init(initial: Root, read: @escaping @Sendable (Root) -> Part, handler: @escaping @Sendable (Part) -> Void) {
        self.read = read
        self.handler = handler
        self.last = read(initial)
    }

    func evaluate(_ root: Root) {
        let part = read(root)
        if part == last { return }
        last = part
        handler(part)
    }
}
