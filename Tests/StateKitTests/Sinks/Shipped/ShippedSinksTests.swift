import Foundation
import StateKit
import Testing

@Suite(.timeLimit(.minutes(1))) struct ShippedSinksTests {
    @Test func analyticsSinkWritesEveryChangeAsAJSONLine() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "statekit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = JSONLinesAnalyticsBackend(fileURL: directory.appending(path: "events.jsonl"))
        let key = uniqueKey()
        let state = SyncedState("free", key: key) {
            AnalyticsSink(backend: backend) { change in
                AnalyticsEvent(name: "plan_changed", properties: ["from": change.oldValue, "to": change.newValue])
            }
        }
        let plans = (1...50).map { "plan-\($0)" }
        for plan in plans { state.modify(plan) }
        await state.flush()
        let events = try backend.events()
        #expect(events.count == 50)
        #expect(events.map(\.properties["to"]) == plans)
        #expect(events.first?.properties["from"] == "free")
        let instance = try #require(
            events.first?.idempotencyKey.split(separator: "#").last?.split(separator: ":").first)
        #expect(events.map(\.idempotencyKey) == (1...50).map { "\(key)#\(instance):\($0)" })
        #expect(Set(events.map(\.name)) == ["plan_changed"])
        let text = try String(contentsOf: backend.fileURL, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 50)
    }

    @Test func loggingSinkWritesOneStructuredLinePerChange() async {
        let lines = Collector<String>()
        let key = uniqueKey()
        let state = SyncedState("a b", key: key) {
            LoggingSink(label: "test.change") { lines.append($0) }
        }
        state.modify("x=\"y\"")
        state.modify("plain")
        await state.flush()
        #expect(lines.count == 2)
        let first = lines.all.first ?? ""
        let instance = first.split(separator: "#").dropFirst().first?.prefix(16) ?? ""
        #expect(first.hasPrefix("test.change key=\(key) version=1 id=\(key)#\(instance):1 at="))
        #expect(first.hasSuffix(#"old="a b" new="x=\"y\"""#))
        #expect(lines.all.last?.hasSuffix("old=\"x=\\\"y\\\"\" new=plain") == true)
    }

    @Test func closureSinkReceivesOrderedBatches() async {
        let received = Collector<UInt64>()
        let state = SyncedState(0, key: uniqueKey()) {
            ClosureSink { changes in
                for change in changes { received.append(change.version) }
            }
        }
        for value in 1...300 { state.modify(value) }
        await state.flush()
        #expect(received.all == Array(1...300))
    }

    @Test func retryDelayGrowsExponentiallyCapsAndHonoursRetryAfterUpToTheMaximum() {
        let retry = RetryPolicy(initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(1), jitter: 0)
        #expect(retry.delay(beforeRetry: 1) == .milliseconds(100))
        #expect(retry.delay(beforeRetry: 3) == .milliseconds(400))
        #expect(retry.delay(beforeRetry: 10) == .seconds(1))
        #expect(retry.delay(beforeRetry: 1, retryAfter: .milliseconds(700)) == .milliseconds(700))
        #expect(retry.delay(beforeRetry: 1, retryAfter: .seconds(3)) == .seconds(1))
        let jittered = RetryPolicy(initialDelay: .milliseconds(100), jitter: 0.5)
        for _ in 0..<100 {
            let delay = jittered.delay(beforeRetry: 1)
            #expect(delay >= .milliseconds(50) && delay <= .milliseconds(100))
        }
    }

    @Test func defaultPolicyMatchesTheDesign() {
        let policy = SinkPolicy.default
        #expect(policy.maximumBatchSize == 100)
        #expect(policy.flushInterval == .zero)
        #expect(policy.retry.initialDelay <= .milliseconds(100))
        #expect(policy.retry.maximumAttempts >= 5)
        #expect(policy.retry.jitter > 0)
    }
}

@Suite(.timeLimit(.minutes(1))) struct SyncedPropertyWrapperTests {
    final class Model {
        let sink = TestSink<Int>()
        @Synced var count: Int

        init(key: String) {
            _count = Synced(wrappedValue: 0, key: key, sinks: [sink])
        }
    }

    @Test func assigningTheWrappedPropertySendsTheChange() async {
        let key = uniqueKey()
        let model = Model(key: key)
        model.count = 5
        model.$count.modify { $0 += 1 }
        await model.$count.flush()
        #expect(model.count == 6)
        #expect(model.$count.key == key)
        #expect(model.sink.changes.map(\.newValue) == [5, 6])
    }
}
