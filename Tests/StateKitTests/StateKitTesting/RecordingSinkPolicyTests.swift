import Foundation
import StateKit
import StateKitTesting
import Testing

@Suite struct RecordingSinkPolicyTests {
    @Test func containerFeedsTheSinkWithTheGivenPolicy() async {
        let giveUpAtOnce = SinkPolicy(
            retry: RetryPolicy(initialDelay: .microseconds(1), maximumAttempts: 1),
            afterRepeatedFailures: .giveUpAndReport
        )
        let sink = RecordingSink<Int>(policy: giveUpAtOnce)
        let key = uniqueKey()
        let diagnostics = StateKitTesting.DiagnosticsRecorder(involving: key)
        sink.failNextSends(1)
        let score = SyncedState(0, key: key, sinks: [sink])
        score ~> 1
        await score.flush()
        #expect(sink.sendCount == 1)
        #expect(sink.values.isEmpty)
        #expect(diagnostics.diagnostics.map(\.kind) == [.sinkGaveUp])
    }

    @Test func defaultPolicyIsTheDefault() {
        #expect(RecordingSink<Int>().policy == .default)
        #expect(RecordingSink<Int>(policy: .latestValue).policy == .latestValue)
    }
}
