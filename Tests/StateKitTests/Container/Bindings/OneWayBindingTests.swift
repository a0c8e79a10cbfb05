import Foundation
import StateKitTesting
import Testing

@testable import StateKit

/// A one-way binding (`target <~ source`, no binding leading back) hands its target every value of
/// its source, in the source's version order, as ReactiveSwift's `<~` does: a subscriber of the
/// target sees each of them once, however many threads write the source.
@Suite(.contendingTimeLimit) struct OneWayBindingTests {
    struct Counter: Equatable, Sendable {
        var count = 0
        var other = 0
    }

    /// The four `<~` overloads of containers and projections.
    enum Overload: String, CaseIterable, CustomStringConvertible {
        case containerFromContainer = "container <~ container"
        case containerFromProjection = "container <~ projection"
        case projectionFromContainer = "projection <~ container"
        case projectionFromProjection = "projection <~ projection"
        var description: String { rawValue }
    }

    /// 4 threads × 1,000 `modify { $0 += 1 }` into the source, bound into a target whose
    /// subscriber records what it sees: the source's initial value 0, then 1...4000, in order,
    /// none dropped, none twice. (It saw 36-661 of the 4,001 values while a binding forwarded
    /// only the latest value, issue 53.)
    @Test(arguments: Overload.allCases)
    func aOneWayBindingDeliversEverySourceValueInOrder(_ overload: Overload) async throws {
        let source = MonitoredState(Counter(), key: uniqueKey("source"))
        let sourceCount = MonitoredState(0, key: uniqueKey("sourceCount"))
        let target = MonitoredState(Counter(count: -1), key: uniqueKey("target"))
        let targetCount = MonitoredState(-1, key: uniqueKey("targetCount"))
        let binding: Subscription
        let write: @Sendable () -> Void
        switch overload {
        case .containerFromContainer:
            binding = targetCount <~ sourceCount
            write = { sourceCount.modify { $0 += 1 } }
        case .containerFromProjection:
            binding = targetCount <~ source.count
            write = { source.modify { $0.count += 1 } }
        case .projectionFromContainer:
            binding = target.count <~ sourceCount
            write = { sourceCount.modify { $0 += 1 } }
        case .projectionFromProjection:
            binding = target.count <~ source.count
            write = { source.modify { $0.count += 1 } }
        }
        defer { binding.cancel() }
        let seen =
            overload == .containerFromContainer || overload == .containerFromProjection
            ? targetCount.record() : target.count.record()
        defer { seen.cancel() }

        await expectEveryValue(seen, of: write) {
            await waitUntilDelivered(targetCount)
            await waitUntilDelivered(target)
        }
    }

    /// A target whose subscriber takes 50 µs a value, far slower than 4 threads writing the
    /// source: its queue reaches the limit, the binding's writes wait for room there (holding
    /// back the source's writers), and the target's subscriber still sees every value, in order.
    @Test func aSlowTargetHoldsBackItsSourceAndLosesNothing() async throws {
        let source = MonitoredState(0, key: uniqueKey("source"))
        let target = MonitoredState(-1, key: uniqueKey("target"))
        let binding = target <~ source
        defer { binding.cancel() }
        let slow = target.subscribe { _ in usleep(50) }
        defer { slow.cancel() }
        let seen = target.record()
        defer { seen.cancel() }

        await expectEveryValue(seen, of: { source.modify { $0 += 1 } }) { await waitUntilDelivered(target) }
    }

    /// `b <~ a` joined by `a <~ b` forwards the latest value; once `a <~ b` is released it hands
    /// `b` every value of `a` again: 4 threads × 1,000 writes into `a`, all seen by `b`'s
    /// subscriber, in order.
    @Test func aBindingThatLeavesALoopDeliversEveryValueAgain() async throws {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let binding = b <~ a
        defer { binding.cancel() }
        let back = a <~ b
        a ~> 7
        #expect(b.value == 7)
        back.cancel()
        a ~> 0
        let seen = b.record()
        defer { seen.cancel() }

        await expectEveryValue(seen, of: { a.modify { $0 += 1 } }) { await waitUntilDelivered(b) }
    }

    /// Runs `write` 1,000 times on each of 4 threads, waits for the targets to deliver (`drained`),
    /// and expects `seen` to hold 0...4000, each once, in order.
    private func expectEveryValue(
        _ seen: StateRecorder<Int>, of write: @escaping @Sendable () -> Void,
        sourceLocation: SourceLocation = #_sourceLocation, drained: () async -> Void
    ) async {
        await onThreads(4) { _ in
            for _ in 0..<1_000 { write() }
        }
        await eventually("the target to see the last value", sourceLocation: sourceLocation) { seen.latest == 4_000 }
        await drained()
        let values = seen.values
        let firstOutOfOrder = values.indices.dropFirst().first { values[$0] != values[$0 - 1] + 1 }
        #expect(values.count == 4_001, "saw \(values.count) of the 4,001 values", sourceLocation: sourceLocation)
        #expect(
            values == Array(0...4_000), "first value out of order at \(firstOutOfOrder.map(String.init) ?? "none")",
            sourceLocation: sourceLocation)
    }
}
