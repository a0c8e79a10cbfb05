import Foundation
import Testing

@testable import StateKit  // to count who follows a shared pipeline's statistics

/// The containers that share a key's pipeline (persisted, syncing to one destination) follow its
/// statistics, for their status and receipts, only while they live.
@Suite struct StatisticsObserverTests {
    /// Two hundred short-lived containers that read the status and await a receipt leave nothing
    /// behind in the pipeline they shared: each change of its statistics would tell every one.
    @Test func releasedContainersStopFollowingTheirSharedPipeline() async {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let first = SyncedState(0, key: key, storage: storage, sinks: [TestRemoteSink<Int>(destination: "memory")])
        _ = first.syncStatus.value
        for _ in 0..<200 {
            let other = SyncedState(
                0, key: key, storage: storage, sinks: [TestRemoteSink<Int>(destination: "memory")])
            _ = other.syncStatus.value
            #expect(await other.write { $0 += 1 }.outcome(timeout: .seconds(60)) == .delivered)
        }
        let observer = first.pipelines[0].statisticsObserver.current
        #expect(first.value == 200)
        // The next change of the statistics forgets the followers that are gone.
        first.modify { $0 += 1 }
        #expect(await first.flush(timeout: .seconds(60)))
        #expect(observer?.followerCount == 0)
        // One that lives follows until it goes.
        let second = SyncedState(0, key: key, storage: storage, sinks: [TestRemoteSink<Int>(destination: "memory")])
        _ = second.syncStatus.value
        #expect(observer?.followerCount == 1)
        first.modify { $0 += 1 }
        #expect(await first.flush(timeout: .seconds(60)))
        let sent = first.statistics[0].sent
        await eventually("the second container's status hears of the send") {
            second.syncStatus.value.sinks.first?.sent == sent
        }
    }
}
