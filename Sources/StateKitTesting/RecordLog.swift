import Foundation

/// A thread-safe, append-only log with a read cursor, and waiters for the next elements.
///
/// Recorders and ``RecordingSink`` append from whatever thread delivers; tests read it and wait on
/// it from theirs. Waiters are served first come, first served, each taking the next `count`
/// elements after the cursor.
final class RecordLog<Element: Sendable>: @unchecked Sendable {
    private struct Waiter {
        let id: UInt64
        let count: Int
        let continuation: CheckedContinuation<[Element], any Error>
        var timer: Task<Void, Never>?
    }

    private let lock = NSLock()
    private var elements: [Element] = []
    private var cursor = 0
    private var waiters: [Waiter] = []
    private var nextWaiterID: UInt64 = 0
    private var abandonedWaiterIDs: Set<UInt64> = []

    /// Everything appended so far, in order.
    var all: [Element] {
        lock.withLock { elements }
    }

    /// The elements appended after the cursor.
    var unread: [Element] {
        lock.withLock { Array(elements[cursor...]) }
    }

    /// Appends `element` and serves the waiters it completes.
    func append(_ element: Element) {
        append(contentsOf: [element])
    }

    /// Appends `newElements` in order and serves the waiters they complete.
    func append(contentsOf newElements: [Element]) {
        let served = lock.withLock {
            elements.append(contentsOf: newElements)
            return serveLocked()
        }
        resume(served)
    }

    /// Waits for the next `count` elements after the cursor, moves the cursor past them and
    /// returns them; throws `failure(unread)` if they have not all arrived within `timeout`.
    func next(
        _ count: Int,
        timeout: Duration,
        failure: @escaping @Sendable (_ unread: [Element], _ all: [Element]) -> any Error
    ) async throws -> [Element] {
        precondition(count > 0, "next(_:timeout:) needs a count of at least 1")
        let id = lock.withLock {
            nextWaiterID += 1
            return nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let served: [(CheckedContinuation<[Element], any Error>, [Element])]
                lock.lock()
                if abandonedWaiterIDs.remove(id) != nil {
                    lock.unlock()
                    continuation.resume(throwing: CancellationError())
                    return
                }
                waiters.append(Waiter(id: id, count: count, continuation: continuation))
                served = serveLocked()
                let isWaiting = waiters.contains { $0.id == id }
                lock.unlock()
                resume(served)
                guard isWaiting else { return }
                let timer = Task { [weak self] in
                    do {
                        try await Task.sleep(for: timeout)
                    } catch {
                        return
                    }
                    self?.abandon(id) { unread, all in failure(unread, all) }
                }
                let isStillWaiting = lock.withLock {
                    guard let index = waiters.firstIndex(where: { $0.id == id }) else { return false }
                    waiters[index].timer = timer
                    return true
                }
                if !isStillWaiting { timer.cancel() }
            }
        } onCancel: {
            abandon(id) { _, _ in CancellationError() }
        }
    }

    /// Fails waiter `id` with the error `failure` makes, if it is still waiting; remembers the id
    /// otherwise, in case it has not started waiting yet.
    private func abandon(_ id: UInt64, failure: ([Element], [Element]) -> any Error) {
        lock.lock()
        guard let index = waiters.firstIndex(where: { $0.id == id }) else {
            abandonedWaiterIDs.insert(id)
            lock.unlock()
            return
        }
        let waiter = waiters.remove(at: index)
        let error = failure(Array(elements[cursor...]), elements)
        let served = serveLocked()
        lock.unlock()
        waiter.timer?.cancel()
        waiter.continuation.resume(throwing: error)
        resume(served)
    }

    /// Removes the waiters that can be served now, in order. Called with the lock held.
    private func serveLocked() -> [(CheckedContinuation<[Element], any Error>, [Element])] {
        var served: [(CheckedContinuation<[Element], any Error>, [Element])] = []
        while let first = waiters.first, elements.count - cursor >= first.count {
            waiters.removeFirst()
            first.timer?.cancel()
            served.append((first.continuation, Array(elements[cursor..<cursor + first.count])))
            cursor += first.count
        }
        return served
    }

    private func resume(_ served: [(CheckedContinuation<[Element], any Error>, [Element])]) {
        for (continuation, elements) in served {
            continuation.resume(returning: elements)
        }
    }
}
