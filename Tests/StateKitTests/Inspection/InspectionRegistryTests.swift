import Foundation
import Testing

@testable import StateKit

/// The registry an inspector reads: every live container, whenever it was made, and the change
/// tallies a tool turns on and off. Serialized: counting turns on every container's tally.
@Suite(.serialized) struct InspectionRegistryTests {
    private func handle(of key: String) -> InspectionHandle? {
        InspectionRegistry.shared.handles.first { $0.key == key }
    }

    private func tallyIsOn<Value>(_ state: State<Value>) -> Bool {
        state.lock.withLock { state.fields.pointee.tally.isOn }
    }

    @Test func everyLiveContainerIsListedAndAReleasedOneReadsNothing() throws {
        let key = uniqueKey()
        var count: MonitoredState<Int>? = MonitoredState(1, key: key)
        count?.modify(2)
        let listed = try #require(handle(of: key))
        #expect(listed.valueTypeName == "Int")
        #expect(listed.readTally(clearing: false)?.value as? Int == 2)
        #expect(listed.readTally(clearing: false)?.version == 1)
        count = nil
        #expect(listed.readTally(clearing: false) == nil)
        #expect(handle(of: key) == nil)
    }

    @Test func theTallyCountsOriginsOnlyWhileAToolCounts() throws {
        let key = uniqueKey()
        let title = MonitoredState("a", key: key)
        let listed = try #require(handle(of: key))
        title.modify("b")
        #expect(listed.readTally(clearing: true)?.origins == [])
        InspectionRegistry.shared.beginCounting()
        #expect(tallyIsOn(title))
        title.modify("c")
        let reading = try #require(listed.readTally(clearing: true))
        #expect(reading.origins == [.local])
        #expect(reading.lastOrigin == .local)
        #expect(reading.value as? String == "c")
        #expect(listed.readTally(clearing: true)?.origins == [])
        InspectionRegistry.shared.endCounting()
        #expect(!tallyIsOn(title))
        title.modify("d")
        #expect(listed.readTally(clearing: true)?.origins == [])
    }

    /// A container made while a tool counts counts too, and stops with the others.
    @Test func aContainerMadeWhileAToolCountsCountsUntilItEnds() throws {
        InspectionRegistry.shared.beginCounting()
        let key = uniqueKey()
        let title = MonitoredState("a", key: key)
        #expect(tallyIsOn(title))
        title.modify("b")
        #expect(try #require(handle(of: key)).readTally(clearing: true)?.origins == [.local])
        InspectionRegistry.shared.endCounting()
        #expect(!tallyIsOn(title))
    }
}
