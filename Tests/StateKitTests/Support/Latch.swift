import Foundation

/// Holds every task that waits on it until it is opened; once open, it stays open.
final class Latch: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = lock.withLock {
                if !self.isOpen { waiting.append(continuation) }
                return self.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }

    func open() {
        let waiting = lock.withLock {
            isOpen = true
            defer { self.waiting = [] }
            return self.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
