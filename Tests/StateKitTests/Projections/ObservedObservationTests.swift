import Observation
import Testing

@testable import StateKit

@Suite struct ObservedObservationTests {
    struct App: Equatable, Sendable {
        var name = "Ann"
        var visits = 0
    }

    @Test func projectionFiresOnlyWhenItsPartChanges() {
        let app = MonitoredState(App(), key: uniqueKey())
        let name = app.name
        let probe = TrackingProbe<String>()
        probe.trackContinuously { name.value }
        app.visits ~> 1
        app.modify { $0.visits += 1 }
        app.name ~> "Ann"
        #expect(probe.firings.isEmpty)
        app.name ~> "Bob"
        app.modify { $0.name = "Cy" }
        #expect(probe.firings == ["Bob", "Cy"])
    }

    @Test func projectionOnChangeRunsAfterItsPartLands() {
        let app = MonitoredState(App(), key: uniqueKey())
        let visits = app.visits
        let probe = TrackingProbe<Int>()
        probe.trackOnce { visits.value }
        app.visits ~> 5
        #expect(probe.firings == [5])
    }

    @Test func readOnlyViewTracksLikeItsContainer() {
        let app = MonitoredState(App(), key: uniqueKey())
        let whole = app.readOnly
        let probe = TrackingProbe<App>()
        probe.trackOnce { whole.value }
        app.visits ~> 5
        #expect(probe.firings == [App()])
    }

    @Test func releasedProjectionLeavesNothingInTheContainer() {
        let app = MonitoredState(App(), key: uniqueKey())
        weak var weakName: Observed<String>?
        do {
            let name = app.name
            weakName = name
            let probe = TrackingProbe<String>()
            probe.trackOnce { name.value }
            #expect(app.subscriberCount == 1)
            app.name ~> "Bob"
            #expect(probe.firings == ["Bob"])
        }
        #expect(weakName == nil)
        #expect(app.subscriberCount == 0)
    }

    @Test func trackedProjectionKeepsNoCycleWithItsContainer() {
        weak var weakApp: MonitoredState<App>?
        weak var weakName: Observed<String>?
        do {
            let app = MonitoredState(App(), key: uniqueKey())
            weakApp = app
            let name = app.name
            weakName = name
            withObservationTracking {
                _ = name.value
            } onChange: {
            }
        }
        #expect(weakName == nil)
        #expect(weakApp == nil)
    }
}
