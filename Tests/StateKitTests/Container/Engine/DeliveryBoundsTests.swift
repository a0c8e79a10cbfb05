import Dispatch
import Foundation
import Testing

@testable import StateKit

/// Bounded work per writer and bounded memory (the delivery contract in the Delivery semantics article), and the
/// deadlocks the bounded design had to rule out.
@Suite struct DeliveryBoundsTests {
    /// What one run of writers measured.
    struct Load {
        var slowestCall: Duration = .zero
        var peakQueued = 0
        var calls = 0
    }

    /// Runs `writers` threads doing `call` for `seconds` while a sampler records the container's
    /// queue length; returns the slowest call and the longest queue seen.
    func measure<Value: Sendable>(
        _ state: State<Value>,
        writers: Int,
        seconds: Double,
        _ call: @escaping @Sendable (Int) -> Void
    ) async -> Load {
        await contending { measureBlocking(state, writers: writers, seconds: seconds, call) }
    }

    func measureBlocking<Value: Sendable>(
        _ state: State<Value>,
        writers: Int,
        seconds: Double,
        _ call: @escaping @Sendable (Int) -> Void
    ) -> Load {
        let result = LockedBox(Load())
        let stop = Date().addingTimeInterval(seconds)
        let sampling = DispatchSemaphore(value: 0)
        let sampler = Thread {
            while Date() < stop {
                let queued = state.lock.withLock { state.fields.pointee.delivery.queue.count }
                result.withLock { $0.peakQueued = max($0.peakQueued, queued) }
                usleep(200)
            }
            sampling.signal()
        }
        sampler.start()
        onThreads(writers) { thread in
            var slowest = Duration.zero
            var calls = 0
            let clock = ContinuousClock()
            while Date() < stop {
                let start = clock.now
                call(thread)
                slowest = max(slowest, clock.now - start)
                calls += 1
            }
            result.withLock {
                $0.slowestCall = max($0.slowestCall, slowest)
                $0.calls += calls
            }
        }
        waitFor(sampling, "the queue sampler")
        return result.withLock { $0 }
    }

    @Test func slowestModifyStaysBoundedUnderThreeWritersWithASubscriber() async {
        let state = MonitoredState(0, key: uniqueKey())
        let seen = Collector<Int>()
        let subscription = state.subscribe { if $0 % 1_000 == 0 { seen.append($0) } }
        let load = await measure(state, writers: 3, seconds: 1) { _ in state.modify { $0 += 1 } }
        await waitUntilDelivered(state)
        print(
            "3 writers x 1 s, empty handler: \(load.calls) modify calls, slowest \(load.slowestCall) "
                + "(bound \(slowCallBound)), peak queue \(load.peakQueued)")
        #expect(load.slowestCall < slowCallBound)
        // Past the limit by at most two changes a writer: one made while none of its own was
        // queued, which does not wait, and one that waits for its own earlier ones.
        #expect(load.peakQueued <= DeliveryStateMachine<Int>.pendingLimit + 2 * 3)
        #expect(state.value == load.calls)
        subscription.cancel()
    }

    @Test func forwardingHandlersFeelTheBackpressureOfTheContainerTheyWrite() async {
        // a's handler forwards every value to b, whose subscriber takes 100 µs: two writers of a
        // could queue changes on b ten times faster than b delivers them.
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let forwarding = a.subscribe { b.modify($0) }
        let slow = b.subscribe { _ in usleep(100) }
        let outsideWrite = LockedBox(Duration.zero)
        let load = await contending {
            let outsideWriter = Thread {
                usleep(300_000)
                let clock = ContinuousClock()
                let start = clock.now
                b.modify(-1)
                outsideWrite.withLock { $0 = clock.now - start }
            }
            outsideWriter.start()
            return self.measureBlocking(b, writers: 2, seconds: 1) { _ in a.modify { $0 += 1 } }
        }
        await waitUntilDelivered(a)
        await waitUntilDelivered(b)
        print(
            "2 writers of a forwarding to b (100 µs handler) x 1 s: \(load.calls) writes, "
                + "peak queue on b \(load.peakQueued), outside write to b \(outsideWrite.withLock { $0 })")
        // Past the limit by at most what the running handlers write (one each, two writers).
        #expect(load.peakQueued <= DeliveryStateMachine<Int>.pendingLimit + 4)
        // Waits only for changes made before its own (at most 128 deliveries, 13 ms here).
        #expect(outsideWrite.withLock { $0 } < .seconds(2))
        #expect(b.value == a.value || b.value == -1)
        withExtendedLifetime((forwarding, slow)) {}
    }

    @Test func subscribingToADerivedStateStaysPromptUnderTwoWritersOfItsSource() async {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let doubled = a.map { $0 * 2 }
        let slowest = LockedBox(Duration.zero)
        let subscriber = Thread {
            let clock = ContinuousClock()
            for _ in 0..<40 {
                usleep(20_000)
                let arrived = DispatchSemaphore(value: 0)
                let start = clock.now
                let subscription = doubled.subscribe { _ in arrived.signal() }
                _ = arrived.wait(timeout: .now() + 30)
                let took = clock.now - start
                slowest.withLock { $0 = max($0, took) }
                subscription.cancel()
            }
        }
        subscriber.start()
        let load = await measure(a, writers: 2, seconds: 1) { _ in a.modify { $0 += 1 } }
        await waitUntilDelivered(a)
        print("subscribing to a derived state under 2 writers: slowest first value \(slowest.withLock { $0 })")
        #expect(slowest.withLock { $0 } < slowCallBound)
        #expect(doubled.value == load.calls * 2)
    }

    @Test func handlersSlowerThanWritersHoldTheQueueAtItsBoundWithoutLosingAChange() async {
        let state = MonitoredState([UInt8](repeating: 0, count: 8_192), key: uniqueKey())
        let versions = Collector<UInt64>()
        let subscription = state.subscribeChanges { change in
            versions.append(change.version)
            usleep(20)
        }
        let load = await measure(state, writers: 3, seconds: 1) { _ in state.modify { $0[0] &+= 1 } }
        await waitUntilDelivered(state)
        let peakBytes = load.peakQueued * 8_192
        print(
            "3 writers x 1 s, 8 KB values, 20 µs handler: \(load.calls) calls, slowest \(load.slowestCall), "
                + "peak queue \(load.peakQueued) (\(peakBytes / 1_024) KB of values)")
        #expect(load.slowestCall < slowCallBound)
        // Past the limit by at most two changes a writer: one made while none of its own was
        // queued, which does not wait, and one that waits for its own earlier ones.
        #expect(load.peakQueued <= DeliveryStateMachine<[UInt8]>.pendingLimit + 2 * 3)
        #expect(versions.all == Array(1...UInt64(load.calls)))
        subscription.cancel()
    }

    @Test func slowestSubscribeStaysBoundedUnderTwoWriters() async {
        let state = MonitoredState(0, key: uniqueKey())
        let subscription = state.subscribe { _ in }
        let load = await measure(state, writers: 3, seconds: 1) { thread in
            if thread == 2 {
                state.subscribe { _ in }.cancel()
            } else {
                state.modify { $0 += 1 }
            }
        }
        await waitUntilDelivered(state)
        print("2 writers + 1 subscriber x 1 s: slowest call \(load.slowestCall), peak queue \(load.peakQueued)")
        #expect(load.slowestCall < slowCallBound)
        // Past the limit by at most two changes a writer: one made while none of its own was
        // queued, which does not wait, and one that waits for its own earlier ones.
        #expect(load.peakQueued <= DeliveryStateMachine<Int>.pendingLimit + 2 * 3)
        subscription.cancel()
    }

    @Test func writerReturnsWithoutDeliveringChangesQueuedAfterItsOwn() async {
        let state = MonitoredState(0, key: uniqueKey())
        let held = HeldDelivery()
        let deliveries = Collector<(value: Int, thread: pthread_t)>()
        let subscription = state.subscribe { value in
            deliveries.append((value, pthread_self()))
            if value == 1 { held.hold() }
        }
        let writerReturned = DispatchSemaphore(value: 0)
        let writerMayExit = DispatchSemaphore(value: 0)
        let firstWriter = LockedBox<pthread_t?>(nil)
        Thread {
            firstWriter.withLock { $0 = pthread_self() }
            state.modify(1)
            writerReturned.signal()
            writerMayExit.wait()  // alive until the end, so no later thread reuses its pthread_t
        }.start()
        held.waitUntilHeld("the first delivery")
        for value in 2...5 { state.modify(value) }
        held.release()
        waitFor(writerReturned, "the first writer")
        await waitUntilDelivered(state)
        let writer = firstWriter.withLock { $0 }!
        let calls = deliveries.all
        #expect(calls.map(\.value) == [0, 1, 2, 3, 4, 5])
        #expect(pthread_equal(calls[1].thread, writer) != 0)
        #expect(calls[2...].allSatisfy { pthread_equal($0.thread, writer) == 0 })
        writerMayExit.signal()
        subscription.cancel()
    }

    /// A container whose first write's delivery holds still, and a thread that fills its queue
    /// past the limit meanwhile: where the tests of a writer at a full queue start.
    struct HeldFullQueue {
        static let limit = DeliveryStateMachine<Int>.pendingLimit
        /// The filler's last value.
        static let lastFilled = limit + 2
        let state = MonitoredState(0, key: uniqueKey())
        private let held = HeldDelivery()
        private let subscription: Subscription
        private let fillerDone = DispatchSemaphore(value: 0)

        /// Writes 1 and waits until its delivery holds still.
        init() {
            let held = held
            subscription = state.subscribe { value in if value == 1 { held.hold() } }
            Thread { [state] in state.modify(1) }.start()
            held.waitUntilHeld()
        }

        /// Has another thread write 2 through ``lastFilled``, and returns how many changes are
        /// queued once it has written the last (it may wait for room after that).
        func fill() -> Int {
            Thread { [state, fillerDone] in
                for value in 2...Self.lastFilled { state.modify(value) }
                fillerDone.signal()
            }.start()
            let filled = ContinuousClock.now + .seconds(60)
            while state.value != Self.lastFilled && ContinuousClock.now < filled { usleep(1_000) }
            return state.lock.withLock { state.fields.pointee.delivery.queue.count }
        }

        /// Lets the held delivery go on, and waits for the filler and for every queued delivery.
        func release() async {
            held.release()
            waitFor(fillerDone, "the writer that filled the queue")
            await waitUntilDelivered(state)
            subscription.cancel()
        }
    }

    /// A writer with no change of its own queued returns at once from a queue that another
    /// writer holds past its limit, and a delivery holds still: it waits for its own share only.
    /// (It waited until the queue was down to its resume limit: here, until the delivery went on.)
    @Test func aWriterWithNothingQueuedReturnsAtOnceFromAQueueAnotherHoldsAtItsLimit() async {
        let full = HeldFullQueue()
        let queued = full.fill()
        let outsideReturned = DispatchSemaphore(value: 0)
        Thread { [state = full.state] in
            state.modify(-1)
            outsideReturned.signal()
        }.start()
        let returnedWhileHeld = outsideReturned.wait(timeout: .now() + .seconds(5)) == .success
        await full.release()
        if !returnedWhileHeld { waitFor(outsideReturned, "the outside writer") }
        #expect(queued > HeldFullQueue.limit, "the filling writer queued only \(queued)")
        #expect(returnedWhileHeld, "the outside writer waited for the other writer's changes")
        #expect(full.state.value == -1)
    }

    /// A writer whose earlier change is still queued, but within the limit, returns at once from a
    /// queue another writer holds past it, while a delivery holds still: only a change of its own
    /// already past the limit makes a writer wait. (It waited for its earlier change, or for the
    /// queue to shrink by 128: a write into a binding storm every 5 ms waited for 128 of the
    /// storm's deliveries each time, 1.88 s once in CI under ThreadSanitizer.)
    @Test func aWriterWhoseEarlierChangeIsWithinTheLimitReturnsAtOnce() async {
        let full = HeldFullQueue()
        // One thread writes -1 now, at the head of the queue, and -2 once the queue is full.
        let write = (first: DispatchSemaphore(value: 0), second: DispatchSemaphore(value: 0))
        let returned = (first: DispatchSemaphore(value: 0), second: DispatchSemaphore(value: 0))
        Thread { [state = full.state] in
            write.first.wait()
            state.modify(-1)
            returned.first.signal()
            write.second.wait()
            state.modify(-2)
            returned.second.signal()
        }.start()
        write.first.signal()
        waitFor(returned.first, "the outside writer's first write")
        let queued = full.fill()
        write.second.signal()
        let returnedWhileHeld = returned.second.wait(timeout: .now() + .seconds(5)) == .success
        await full.release()
        if !returnedWhileHeld { waitFor(returned.second, "the outside writer's second write") }
        #expect(queued > HeldFullQueue.limit, "the filling writer queued only \(queued)")
        #expect(returnedWhileHeld, "the outside writer waited for changes queued after its earlier one")
        #expect(full.state.value == -2)
    }

    @Test func writersOnTheGlobalQueueWaitingAtTheLimitDoNotStarveTheDeliverer() async {
        let state = MonitoredState(0, key: uniqueKey())
        let subscription = state.subscribe { _ in usleep(50) }
        let finished = await contending {
            let group = DispatchGroup()
            for _ in 0..<(2 * ProcessInfo.processInfo.activeProcessorCount) {
                DispatchQueue.global().async(group: group) {
                    for _ in 0..<1_500 { state.modify { $0 += 1 } }
                }
            }
            return group.wait(timeout: .now() + 60) == .success
        }
        #expect(finished)
        await waitUntilDelivered(state)
        #expect(state.value == 3_000 * ProcessInfo.processInfo.activeProcessorCount)
        subscription.cancel()
    }

    struct Pair: Equatable, Sendable {
        var own = 0
        var fromOther = 0
    }

    @Test func handlersWritingBackToEachOthersContainerUnderTwoDeliverersFinish() async {
        let a = MonitoredState(Pair(), key: uniqueKey("a"))
        let b = MonitoredState(Pair(), key: uniqueKey("b"))
        let aToB = a.own.subscribe { value in if value > 0 { b.fromOther.modify { $0 += 1 } } }
        let bToA = b.own.subscribe { value in if value > 0 { a.fromOther.modify { $0 += 1 } } }
        let writersFinished = await contending {
            let finished = DispatchSemaphore(value: 0)
            for container in [a, b] {
                Thread {
                    for _ in 0..<2_000 { container.own.modify { $0 += 1 } }
                    finished.signal()
                }.start()
            }
            return (0..<2).allSatisfy { _ in finished.wait(timeout: .now() + 60) == .success }
        }
        #expect(writersFinished)
        await waitUntilDelivered(a)
        await waitUntilDelivered(b)
        await waitUntilDelivered(a)
        #expect(a.value == Pair(own: 2_000, fromOther: 2_000))
        #expect(b.value == Pair(own: 2_000, fromOther: 2_000))
        aToB.cancel()
        bToA.cancel()
    }

    @Test func handlerWaitingOnTheMainQueueWhileTheMainThreadWritesDoesNotDeadlock() async {
        let state = MonitoredState(0, key: uniqueKey())
        let waitedOnMain = Collector<Int>()
        let handlerRunning = DispatchSemaphore(value: 0)
        let subscription = state.subscribe { value in
            if value == 1 {
                handlerRunning.signal()
                DispatchQueue.main.sync { waitedOnMain.append(value) }
            }
        }
        let mainWrites = DispatchSemaphore(value: 0)
        DispatchQueue.main.async {
            handlerRunning.wait()
            for _ in 0..<500 { state.modify { $0 += 1 } }
            mainWrites.signal()
        }
        Thread { state.modify(1) }.start()
        await Task.detached {
            waitFor(mainWrites, "the main thread's writes", seconds: 60)
            await waitUntilDelivered(state)
        }.value
        #expect(waitedOnMain.all == [1])
        #expect(state.value == 501)
        subscription.cancel()
    }
}
