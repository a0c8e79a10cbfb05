import Foundation
import StateKit
import StateKitTesting
import Testing

/// `target <~ sequence`: binding a container to an `AsyncSequence`.
@Suite struct SequenceBindingTests {
    private struct FeedBroke: Error {}

    @Test func eachElementIsWrittenIntoTheTarget() async throws {
        let unread = MonitoredState(0, key: uniqueKey("unread"))
        let values = unread.record()
        let (feed, continuation) = AsyncStream.makeStream(of: Int.self)
        let binding = unread <~ feed
        for count in [3, 3, 5, 8] { continuation.yield(count) }
        #expect(try await values.next(4) == [0, 3, 5, 8])
        #expect(unread.version == 3)
        continuation.finish()
        binding.cancel()
    }

    @Test func bindingEndsWhenTheSequenceEnds() async {
        let target = MonitoredState("", key: uniqueKey("target"))
        let binding = target <~ ["a", "b", "c"].async
        await eventually("the binding to end") { !binding.isActive }
        #expect(target.value == "c")
    }

    @Test func cancellingStopsTheBindingAndEndsItsIteration() async {
        let target = MonitoredState(0, key: uniqueKey("target"))
        let (feed, continuation) = AsyncStream.makeStream(of: Int.self)
        let ended = Collector<Bool>()
        continuation.onTermination = { _ in ended.append(true) }
        let binding = target <~ feed
        continuation.yield(1)
        await eventually("the first element") { target.value == 1 }
        binding.cancel()
        await eventually("the sequence to end") { ended.count == 1 }
        #expect(!binding.isActive)
        if case .enqueued = continuation.yield(2) { Issue.record("the cancelled binding still iterates") }
        #expect(target.value == 1)
    }

    @Test func releasingTheTokenStopsTheBinding() async {
        let target = MonitoredState(0, key: uniqueKey("target"))
        let (feed, continuation) = AsyncStream.makeStream(of: Int.self)
        let ended = Collector<Bool>()
        continuation.onTermination = { _ in ended.append(true) }
        do {
            let binding = target <~ feed
            _ = binding
        }
        await eventually("the sequence to end") { ended.count == 1 }
        continuation.yield(7)
        #expect(target.value == 0)
    }

    @Test func throwingSequenceEndsTheBindingWithADiagnosticNamingTheKey() async {
        DiagnosticsRecorder.start()
        let target = MonitoredState(0, key: uniqueKey("target"))
        let (feed, continuation) = AsyncThrowingStream.makeStream(of: Int.self)
        let binding = target <~ feed
        continuation.yield(4)
        continuation.finish(throwing: FeedBroke())
        await eventually("the binding to end") { !binding.isActive }
        let reports = DiagnosticsRecorder.diagnostics(involving: target.key)
        #expect(reports.map(\.kind) == [.bindingFailed])
        #expect(reports.first?.description.contains(target.key) == true)
        #expect(target.value == 4)
    }

    @Test func writableProjectionAndAnotherContainersValuesBind() async throws {
        struct Profile: Equatable, Sendable { var name = "" }
        let profile = MonitoredState(Profile(), key: uniqueKey("profile"))
        let source = MonitoredState("Ann", key: uniqueKey("source"))
        let names = profile.name.record()
        let binding = profile.name <~ source.values
        #expect(try await names.next(2) == ["", "Ann"])
        source ~> "Bob"
        #expect(try await names.next() == ["Bob"])
        binding.cancel()
    }
}

extension Array where Element: Sendable {
    /// The elements as an `AsyncSequence` that ends after the last one.
    fileprivate var async: AsyncStream<Element> {
        AsyncStream { continuation in
            for element in self { continuation.yield(element) }
            continuation.finish()
        }
    }
}
