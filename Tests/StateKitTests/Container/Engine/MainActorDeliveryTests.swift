import Foundation
import StateKit
import Testing

@Suite struct MainActorDeliveryTests {
    @Test func mainActorSubscriberRunsOnMainQueueInOrder() async {
        let mainQueue = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: mainQueue, value: true)
        let state = MonitoredState(0, key: uniqueKey())
        let seen = Collector<Int>()
        let onMain = Collector<Bool>()
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let subscription = state.subscribeOnMain { value in
            seen.append(value)
            onMain.append(DispatchQueue.getSpecific(key: mainQueue) == true)
            if value == 3 { continuation.finish() }
        }
        for value in 1...3 { state.modify(value) }
        for await _ in stream {}
        #expect(seen.all == [0, 1, 2, 3])
        #expect(onMain.all.allSatisfy { $0 })
        subscription.cancel()
    }
}
