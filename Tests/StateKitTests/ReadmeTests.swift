import StateKit
import StateKitTesting
import Testing

/// The README's examples, compiled and run so they cannot drift from the API.
@Suite struct ReadmeTests {
    struct User: Equatable, Sendable {
        var name: String
        var visits = 0
    }

    struct AppModel: Equatable, Sendable {
        var user = User(name: "Ann")
        var theme = "light"
    }

    @Test func tourRunsAsDocumented() {
        let app = MonitoredState(AppModel(), key: "app")
        let names = app.user.name.record()
        app.user.visits ~> { $0 += 1 }
        app.theme ~> "dark"
        app.user.name ~> "Tim"
        app.modify { $0.user.visits += 10 }
        #expect(names.values == ["Ann", "Tim"])
        #expect(app.version == 4)
        #expect(app.value.user.visits == 11)
    }

    @Test func renamingTheUserNotifiesOnlyNameSubscribers() async throws {
        let app = MonitoredState(AppModel(), key: "app")
        let names = app.user.name.record()
        app.theme ~> "dark"
        app.user.name ~> "Tim"
        #expect(names.values == ["Ann", "Tim"])

        Task.detached { app.user.name ~> "Eve" }
        #expect(try await names.next(3, timeout: .seconds(5)) == ["Ann", "Tim", "Eve"])
    }
}
