import Observation
import Testing

@testable import StateKit

/// A model with no macro at all: the property wrapper's container is the `Observable` part.
private final class PlainCounterModel: @unchecked Sendable {
    @Stateful var count = 0
}

/// A model using the `@Observable` macro, which requires `@ObservationIgnored` on property wrappers.
@Observable
private final class MacroCounterModel: @unchecked Sendable {
    @ObservationIgnored @Stateful var count = 0
    var title = "counter"
}

@Suite struct StatefulObservationTests {
    @Test func statefulInPlainClassFiresOncePerChange() {
        let model = PlainCounterModel()
        let probe = TrackingProbe<Int>()
        probe.trackContinuously { model.count }
        model.count = 1
        model.$count ~> 2
        model.$count.modify { $0 += 1 }
        model.count = 3
        #expect(probe.firings == [0, 1, 2])
    }

    @Test func statefulInObservableMacroClassFiresOncePerChange() {
        let model = MacroCounterModel()
        let probe = TrackingProbe<Int>()
        probe.trackContinuously { model.count }
        model.count = 1
        model.$count.modify { $0 += 1 }
        model.title = "other"
        #expect(probe.firings == [0, 1])
    }

    @Test func macroPropertiesAndStatefulTrackTogether() {
        let model = MacroCounterModel()
        let probe = TrackingProbe<String>()
        probe.trackContinuously { "\(model.title) \(model.count)" }
        model.title = "clicks"
        model.count = 1
        #expect(probe.firings == ["counter 0", "clicks 0"])
    }
}
