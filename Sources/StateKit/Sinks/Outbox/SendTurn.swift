/// An asynchronous lock: one task at a time runs its body, in the order they asked.
///
/// The sends of one outbox log take turns through it, so a container that takes over the log of a
/// released one sends only after the released one's last send returned.
///
/// - Note: All operations on `SendTurn` are thread-safe.
final class SendTurn: @unchecked Sendable {
    private let lock = Lock()
    private var isTaken = false
    private var waiting = FIFOQueue<CheckedContinuation<Void, Never>>()

    /// Runs `body` once every earlier caller's body has returned.
    func run<T>(_ body: () async throws -> T) async rethrows -> T {
        await take()
        defer { pass() }
        return try await body()
    }

    private func take() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            if isTaken {
                waiting.append(continuation)
                lock.unlock()
            } else {
                isTaken = true
                lock.unlock()
                continuation.resume()
            }
        }
    }

    private func pass() {
        lock.lock()
        let next = waiting.popFirst()
        if next == nil { isTaken = false }
        lock.unlock()
        next?.resume()
    }
}
