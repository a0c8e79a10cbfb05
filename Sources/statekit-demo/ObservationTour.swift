import Observation
import StateKit

#if canImport(SwiftUI)
import SwiftUI
#endif

/// README's "Using StateKit with SwiftUI and Observation" example, compiled here so it stays true.
final class CounterModel: @unchecked Sendable {
    @Stateful(key: "counter.count") var count = 0
    @Stateful(key: "counter.profile") var profile = Profile()
    /// A kept projection: tracking it fires only when the name changes.
    lazy var name = $profile.name
}

struct Profile: Equatable, Sendable {
    var name = "Ann"
    var visits = 0
}

#if canImport(SwiftUI)
struct CounterView: View {
    let model: CounterModel

    var body: some View {
        // Reading `model.count` and `model.name.value` is all SwiftUI needs to track them.
        Button("\(model.name.value): \(model.count)") { model.count += 1 }
    }
}
#endif

let observationSection = TourSection(
    name: "observation",
    summary: "withObservationTracking and SwiftUI on StateKit containers, no macro"
) {
    let model = CounterModel()
    let subscription = model.$count.subscribe { print("   subscriber: count is \($0)") }

    print("-- a container: onChange runs before the write lands, subscribers after it")
    withObservationTracking {
        _ = model.count
    } onChange: {
        print("   onChange: count is still \(model.count)")
    }
    model.count += 1

    print("-- a kept projection fires only when its part changes")
    withObservationTracking {
        _ = model.name.value
    } onChange: {
        print("   onChange: the name is changing")
    }
    model.$profile.visits ~> 3
    print("   visits changed: no onChange")
    model.$profile.name ~> "Bob"
    subscription.cancel()
}
