import StateKit

/// A thread-safe, append-only log with a read cursor, and waiters for the next elements.
///
/// Recorders and ``RecordingSink`` append from whatever thread delivers; tests read it and wait on
/// it from theirs. Waiters are served first come, first served, each taking the next `count`
/// elements after the cursor.
final class RecordLog<Element: Sendable>: Sendable {
    /// A waiter served: its continuation and the elements it takes.
    private typealias Served = (CheckedContinuation<[Element], any Error>, [Element])

    private struct Waiter {
        let id: UInt64
        let count: Int
        let continuation: CheckedContinuation<[Element], any Error>
        var timer: Task<Void, Never>?
    }

    private struct Contents {
        var elements: [Element] = []
        var cursor = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var abandonedWaiterIDs: Set<UInt64> = []

        /// Removes the waiters that can be served now, in order.
        mutating func serve() -> [Served] {
            var served: [Served] = []
            while let first = waiters.first, elements.count - cursor >= first.count {
                waiters.removeFirst()
                first.timer?.cancel()
                served.append((first.continuation, Array(elements[cursor..<cursor + first.count])))
                cursor += first.count
            }
            return served
        }
    }

    private let contents = LockedBox(Contents())

    /// Everything appended so far, in order.
    var all: [Element] {
        contents.withLock { $0.elements }
    }

    /// The elements appended after the cursor.
    var unread: [Element] {
        contents.withLock { Array($0.elements[$0.cursor...]) }
    }

    /// Appends `element` and serves the waiters it completes.
    func append(_ element: Element) {
        append(contentsOf: [element])
    }

    /// Appends `newElements` in order and serves the waiters they complete.
    func append(contentsOf newElements: [Element]) {
        let served = contents.withLock { contents in
            contents.elements.append(contentsOf: newElements)
            return contents.serve()
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
        let id = contents.withLock { contents in
            contents.nextWaiterID += 1
            return contents.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let queued: (served: [Served], isWaiting: Bool)? = contents.withLock { contents in
                    if contents.abandonedWaiterIDs.remove(id) != nil { return nil }
                    contents.waiters.append(Waiter(id: id, count: count, continuation: continuation))
                    let served = contents.serve()
                    return (served, contents.waiters.contains { $0.id == id })
                }
                guard let (served, isWaiting) = queued else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
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
                let isStillWaiting = contents.withLock { contents in
                    guard let index = contents.waiters.firstIndex(where: { $0.id == id }) else { return false }
                    contents.waiters[index].timer = timer
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
        let abandoned: (waiter: Waiter, error: any Error, served: [Served])? = contents.withLock { contents in
            guard let index = contents.waiters.firstIndex(where: { $0.id == id }) else {
                contents.abandonedWaiterIDs.insert(id)
                return nil
            }
            let waiter = contents.waiters.remove(at: index)
            let error = failure(Array(contents.elements[contents.cursor...]), contents.elements)
            return (waiter, error, contents.serve())
        }
        guard let (waiter, error, served) = abandoned else { return }
        waiter.timer?.cancel()
        waiter.continuation.resume(throwing: error)
        resume(served)
    }

    private func resume(_ served: [Served]) {
        for (continuation, elements) in served {
            continuation.resume(returning: elements)
        }
    }
}
