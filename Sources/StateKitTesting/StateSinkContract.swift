import Foundation
import StateKit

/// Checks that `sink` keeps the ``StateKit/StateSink`` contract, as swift-log's handler
/// conformance checks do for log handlers: run it in your sink's own tests.
///
/// It writes `sampleValues` to a ``StateKit/SyncedState`` with the sink (key `"contract-check"`),
/// then sends batches of them to the sink directly, with the versions that follow, and checks that:
/// - ``StateKit/StateSink/name`` is not empty and ``StateKit/StateSink/policy`` and the name
///   read the same every time (they are read once, when the sink is added);
/// - the policy is usable: batches of at least one change, a buffer of at least one;
/// - a batch is accepted, and the same batch sent again (an at-least-once retry) is accepted too;
/// - a send from a cancelled task returns within 5 seconds (it honours cancellation or is quick);
/// - through a ``StateKit/SyncedState``, ``StateKit/SyncedState/flush(timeout:)`` finishes within 10
///   seconds with nothing failed, dropped or pending;
/// - when you pass `received` (what reached your destination, oldest first), after the container's
///   writes: the destination holds the latest value, and, unless the policy coalesces, every value
///   written in order (repeats from retries allowed).
///
/// ```swift
/// @Test func webhookSinkKeepsTheContract() async throws {
///     let server = try await FakeWebhookServer.start()
///     try await checkStateSinkContract(WebhookSink(url: server.url), sampleValues: [1, 2, 3]) {
///         server.receivedValues
///     }
/// }
/// ```
///
/// - Parameters:
///   - sink: The sink, pointed at a destination that accepts (a test server, a temporary file).
///   - sampleValues: At least three values, each different from the one before.
///   - received: Reads what the destination holds, oldest first; `nil` to skip those checks.
/// - Throws: ``ContractViolation`` listing every requirement the sink broke.
public func checkStateSinkContract<Sink: StateSink>(
    _ sink: Sink,
    sampleValues: [Sink.Value],
    received: (@Sendable () async throws -> [Sink.Value])? = nil
) async throws where Sink.Value: Equatable {
    precondition(sampleValues.count >= 3, "checkStateSinkContract needs at least three sample values")
    var report = ContractReport(contract: "StateSink", subject: sink.name)
    let policy = sink.policy
    report.require(sink.name.isEmpty ? "name: is empty" : nil)
    report.require(sink.name == sink.name ? nil : "name: changes from one read to the next")
    report.require(sink.policy == policy ? nil : "policy: changes from one read to the next")
    report.require(
        policy.maximumBatchSize >= 1 && policy.bufferLimit >= 1
            ? nil : "policy: batches and buffer must hold at least one change")

    // Through a container first, so the sink sees versions from 1, as it would in an app.
    let key = "contract-check"
    let state = SyncedState(sampleValues[0], key: key, sinks: [sink])
    for value in sampleValues.dropFirst() { state.modify { $0 = value } }
    let flushed = await state.flush(timeout: .seconds(10))
    report.require(flushed ? nil : "flush(timeout:) through a SyncedState did not finish within 10 seconds")
    let statistics = state.statistics[0]
    report.require(
        statistics.failed == 0 && statistics.dropped == 0 && statistics.pending == 0
            ? nil : "through a SyncedState: \(statistics)")
    report.require(statistics.sinkName == sink.name ? nil : "statistics name '\(statistics.sinkName)'")
    if let received {
        let sent = Array(sampleValues.dropFirst())
        await report.require("received") {
            let held = try await received()
            guard held.last == sent.last else {
                return "the destination's latest value is \(String(describing: held.last)), not the last sent"
            }
            guard policy.overflow != .coalesceToLatest else { return nil }
            var remaining = sent[...]
            for value in held where value == remaining.first { remaining = remaining.dropFirst() }
            return remaining.isEmpty ? nil : "the destination misses or reorders \(Array(remaining))"
        }
    }

    // Then directly, continuing the versions: a batch, its at-least-once retry, a cancelled send.
    let start = state.version
    let changes = sampleValues.enumerated().map { index, value in
        StateChange(
            key: key, oldValue: index == 0 ? value : sampleValues[index - 1], newValue: value,
            version: start + UInt64(index + 1), timestamp: Date())
    }
    let firstBatch = Array(changes.prefix(2))
    await report.require("send") {
        try await sink.send(firstBatch)
        return nil
    }
    await report.require("send again (an at-least-once retry)") {
        try await sink.send(firstBatch)
        return nil
    }
    report.require(await returnsWithin(.seconds(5), cancelled: true) { try? await sink.send([changes[2]]) })
    try report.finish()
}

/// Whether `body`, run in a task (cancelled at once when `cancelled`), returns within `limit`;
/// a failure message otherwise. Does not wait for a body that never returns.
private func returnsWithin(
    _ limit: Duration,
    cancelled: Bool,
    _ body: @escaping @Sendable () async -> Void
) async -> String? {
    let outcome = FirstOutcome()
    let returned = await withCheckedContinuation { continuation in
        outcome.arm(continuation)
        let task = Task {
            await body()
            outcome.settle(true)
        }
        if cancelled { task.cancel() }
        Task {
            try? await Task.sleep(for: limit)
            outcome.settle(false)
        }
    }
    return returned ? nil : "send from a cancelled task did not return within \(limit)"
}

/// Resumes a continuation with the first outcome settled.
private final class FirstOutcome: Sendable {
    private let continuation = LockedBox<CheckedContinuation<Bool, Never>?>(nil)

    func arm(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func settle(_ outcome: Bool) {
        let continuation = self.continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        continuation?.resume(returning: outcome)
    }
}
