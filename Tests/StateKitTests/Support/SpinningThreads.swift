import Foundation
import Synchronization

/// Threads that keep the machine busy, spinning until stopped.
final class SpinningThreads: Sendable {
    private let isSpinning = Atomic(true)

    init(count: Int) {
        for _ in 0..<count {
            Thread { [self] in
                while isSpinning.load(ordering: .relaxed) {}
            }.start()
        }
    }

    func stop() {
        isSpinning.store(false, ordering: .relaxed)
    }
}
