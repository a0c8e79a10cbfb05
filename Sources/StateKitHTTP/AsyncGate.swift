import Foundation

/// Lets one task at a time through, in arrival order: a sink's pushes and pulls never overlap.
final class AsyncGate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = true
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func run<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            if isOpen {
                isOpen = false
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    private func leave() {
        lock.lock()
        if waiters.isEmpty {
            isOpen = true
            lock.unlock()
        } else {
            let next = waiters.removeFirst()
            lock.unlock()
            next.resume()
        }
    }
}
