import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Scenarios 10 to 13's reference, in the Floor column: the Floor's containers with transactions
/// built as StateKit's are, and nothing else.
///
/// - A write checks one shared count of open transactions, so that a plain write skips the
///   thread-local look-up; inside a body it goes to the thread's log.
/// - The body sees its own writes. Its first touch of a container records the value and version
///   under the container's lock; the log retains the container, so that one released inside the
///   body still commits.
/// - The commit takes every touched container's lock in one order (address), checks each version
///   and runs the body again if one changed, stores every working copy as a new version, unlocks,
///   then calls each container's handlers: no thread sees some of the writes without the others.
///
/// No validators, equality checks, Observation, nesting, change records or delivery ordering, and
/// `Int` values: what StateKit does beyond these is its own cost.
final class TransactionFloor: @unchecked Sendable {
    typealias Handler = @Sendable (Int) -> Void

    struct Storage {
        var value: Int
        var version: UInt64 = 0
        var handlers: [Handler] = []
    }

    let storage: Mutex<Storage>
    /// Held by each container, as StateKit's hold theirs: a field is cheaper than a static.
    let transactions = Transactions.shared

    init(_ value: Int) {
        storage = Mutex(Storage(value: value))
    }

    var value: Int {
        if let log = transactions.openLog { return log.read(self) }
        return storage.withLock { $0.value }
    }

    func modify(_ newValue: Int) {
        if let log = transactions.openLog { return log.write(newValue, to: self) }
        let handlers = storage.withLock { storage in
            storage.value = newValue
            storage.version &+= 1
            return storage.handlers
        }
        for handler in handlers { handler(newValue) }
    }

    func subscribe(_ handler: @escaping Handler) {
        storage.withLock { $0.handlers.append(handler) }
    }

    /// How many transactions are open, and each thread's log.
    final class Transactions: @unchecked Sendable {
        static let shared = Transactions()

        let count = Atomic<Int>(0)
        let key: pthread_key_t

        private init() {
            var key = pthread_key_t()
            pthread_key_create(&key, nil)
            self.key = key
        }

        var openLog: Log? {
            guard count.load(ordering: .relaxed) != 0, let pointer = pthread_getspecific(key) else { return nil }
            let log = Unmanaged<Log>.fromOpaque(pointer).takeUnretainedValue()
            return log.isOpen ? log : nil
        }

        /// The calling thread's log, made on first use; kept for the thread's life.
        var logOfThisThread: Log {
            if let pointer = pthread_getspecific(key) { return Unmanaged<Log>.fromOpaque(pointer).takeUnretainedValue() }
            let log = Log()
            pthread_setspecific(key, Unmanaged.passRetained(log).toOpaque())
            return log
        }
    }

    /// One thread's transaction: each touched container, retained, with its version and working copy.
    final class Log {
        struct Entry {
            let container: TransactionFloor
            let version: UInt64
            var working: Int
            /// The container's handlers, copied by the commit.
            var handlers: [Handler] = []
        }

        var entries: [Entry] = []
        var isOpen = false

        func read(_ container: TransactionFloor) -> Int {
            entries[index(of: container)].working
        }

        func write(_ value: Int, to container: TransactionFloor) {
            entries[index(of: container)].working = value
        }

        private func index(of container: TransactionFloor) -> Int {
            if let index = entries.firstIndex(where: { $0.container === container }) { return index }
            let (value, version) = container.storage.withLock { ($0.value, $0.version) }
            entries.append(Entry(container: container, version: version, working: value))
            return entries.count - 1
        }

        /// Stores every working copy, or nothing if a container changed since the body read it;
        /// then calls the handlers.
        func commit() -> Bool {
            if entries.count > 1 { entries.sort { ObjectIdentifier($0.container) < ObjectIdentifier($1.container) } }
            guard apply(from: 0) else { return false }
            isOpen = false
            for entry in entries {
                for handler in entry.handlers { handler(entry.working) }
            }
            return true
        }

        /// Takes the lock of `entries[index]` and of every later entry, nested, and applies them
        /// all if every version is current. `Mutex` has only `withLock`, hence the recursion.
        private func apply(from index: Int) -> Bool {
            guard index < entries.count else { return true }
            let container = entries[index].container
            return container.storage.withLock { storage in
                guard storage.version == entries[index].version, apply(from: index + 1) else { return false }
                storage.value = entries[index].working
                storage.version &+= 1
                entries[index].handlers = storage.handlers
                return true
            }
        }
    }
}

/// Runs `body` as one transaction over ``TransactionFloor`` containers, again until it commits.
func withFloorTransaction(_ body: () -> Void) {
    let transactions = TransactionFloor.Transactions.shared
    let log = transactions.logOfThisThread
    transactions.count.add(1, ordering: .relaxed)
    log.isOpen = true
    defer {
        log.isOpen = false
        log.entries.removeAll(keepingCapacity: true)
        transactions.count.subtract(1, ordering: .relaxed)
    }
    while true {
        body()
        if log.commit() { return }
        log.entries.removeAll(keepingCapacity: true)
        log.isOpen = true
    }
}
