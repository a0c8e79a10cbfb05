import Dispatch
import Testing

@testable import StateKit

// `StateKit.` because the test target declares a `LockedBox` of its own (DeliveryBoundsTests).
@Suite(.timeLimit(.minutes(1))) struct LockedBoxTests {
    @Test func incrementsFromManyThreadsAreCountedExactly() {
        let count = LockedBox(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { count.withLock { $0 += 1 } }
        }
        #expect(count.withLock { $0 } == 80_000)
    }

    @Test func withLockReturnsWhatTheBodyReturns() {
        let box = LockedBox([1, 2])
        let size = box.withLock { values in
            values.append(3)
            return values.count
        }
        #expect(size == 3)
        #expect(box.withLock { $0 } == [1, 2, 3])
    }

    @Test func aThrowingBodyRethrowsAndReleasesTheLock() {
        struct Refused: Error {}
        let box = LockedBox(0)
        #expect(throws: Refused.self) {
            try box.withLock { value in
                value = 1
                throw Refused()
            }
        }
        // Another thread takes the lock: were it still held, the wait would time out, not hang.
        let done = DispatchSemaphore(value: 0)
        let seen = LockedBox(-1)
        DispatchQueue.global().async {
            let value = box.withLock { $0 }
            seen.withLock { $0 = value }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(seen.withLock { $0 } == 1)
    }
}
