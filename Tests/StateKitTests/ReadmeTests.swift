import StateKit
import Testing

/// The README's examples, compiled and run so they cannot drift from the API.
@Suite struct ReadmeTests {
    struct User: Equatable, Sendable {
        var name: String
        var visits = 0
    }

    struct AppModel: Equatable, Sendable {
        var user = User(name: "Ann")
        var launches = 0
    }

    @Test func tourRunsAsDocumented() {
        let app = MonitoredState(AppModel(), key: "app")
        let names = Collector<String>()
        let subscription = app.user.name.subscribe { names.append($0) }
        app.launches ~> 1
        app.user.name ~> "Tim"
        app.user.visits.modify { $0 += 1 }
        app ~> { $0.launches += 1 }
        #expect(names.all == ["Ann", "Tim"])
        #expect(app.version == 4)
        subscription.cancel()
    }

    @Test func keyPathSubscriptionInATest() async {
        let app = MonitoredState(AppModel(), key: "app")
        var names = app.user.name.values(buffering: .unbounded).makeAsyncIterator()
        #expect(await names.next() == "Ann")
        app.launches ~> 3  // another part changed: no value
        app.user.name ~> "Tim"
        #expect(await names.next() == "Tim")
    }
}
