import Foundation
import Testing

@testable import StateKit

/// A thread's identity among deliverers (``DeliveryContext/id``), which a deliverer and the
/// backpressure at a container's limit use to tell a thread's own queued changes from others'.
@Suite struct DeliveryContextTests {
    /// Runs `body` on a new thread and returns once that thread has ended, its context freed.
    func runOnThreadThatEnds(_ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let error = pthread_create(
            &thread, nil,
            { pointer in
                Unmanaged<Box>.fromOpaque(pointer!).takeRetainedValue().body()
                return nil
            }, box)
        #expect(error == 0)
        pthread_join(thread, nil)
    }

    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Threads that start after others ended never take an ended thread's identity, so a new
    /// thread is never taken for the author of changes an ended one left queued. (The identity was
    /// the context's address, which the allocator hands the next thread: under ThreadSanitizer a
    /// new writer then waited at a full queue for a finished filler's changes.)
    @Test func aThreadNeverTakesTheIdentityOfOneThatEnded() {
        let ids = LockedBox([DeliveryContext.ID]())
        for _ in 0..<100 {
            runOnThreadThatEnds { ids.withLock { $0.append(DeliveryContext.current.id) } }
        }
        let all = ids.withLock { $0 }
        #expect(all.count == 100)
        #expect(Set(all).count == all.count, "\(all.count - Set(all).count) threads took an ended thread's identity")
    }
}
