import StateKit

/// An app model for key-path subscription, and Sundell's video player state.
enum ProjectionsDemo {
    struct User: Sendable, Equatable {
        var name: String
        var visits: Int
        var tags: Set<String>
    }

    struct App: Sendable, Equatable {
        var user = User(name: "Ann", visits: 0, tags: [])
        var theme = "light"
    }

    /// Stands in for a download task.
    struct DownloadTask: Sendable, Equatable {
        let id: Int
    }

    /// Sundell's exclusive video states; `downloadTask` is a computed, read-only query.
    enum VideoState: Sendable, Equatable {
        case willDownload(from: String)
        case downloading(task: DownloadTask)
        case playing(progress: Double)

        var downloadTask: DownloadTask? {
            guard case .downloading(let task) = self else { return nil }
            return task
        }
    }

    final class CounterModel {
        @Stateful(key: "demo.counter") var count = 0
    }
}

let projectionsSection = TourSection(name: "projections", summary: "key-path subscription in an app model") {
    let app = MonitoredState(ProjectionsDemo.App(), key: "app")

    print("-- subscribe to one part: app.user.name")
    let names = app.user.name.subscribe { print("   name is \($0)") }
    app.user.visits.modify { $0 += 1 }
    app.theme ~> "dark"
    print("   wrote visits and theme: the name subscriber was not called")
    app.user.name ~> "Ann"
    print("   wrote an equal name: not called either")
    app.user.name ~> "Tim"
    print("   app.version is \(app.version): each write through a projection is one change of the root")

    print("-- mutate a part in place, atomically")
    app.user.tags ~> { $0.insert("admin") }
    print("   tags: \(app.user.tags.value.sorted())")

    print("-- a computed property is a read-only projection (Sundell's downloadTask)")
    let video = MonitoredState(ProjectionsDemo.VideoState.willDownload(from: "https://example.com/a.mp4"), key: "video")
    let task = video.downloadTask
    let tasks = task.subscribe { print("   downloadTask is \($0.map { "task \($0.id)" } ?? "nil")") }
    video ~> .downloading(task: .init(id: 7))
    video ~> .playing(progress: 0)
    print("   `video.downloadTask ~> nil` does not compile: it is an Observed, not a MutableObserved")

    print("-- bind with <~ and use @Stateful")
    let model = ProjectionsDemo.CounterModel()
    let mirror = MonitoredState(0, key: "demo.mirror")
    let binding = mirror <~ model.$count
    model.count = 3
    model.$count.modify { $0 += 1 }
    print("   model.count = \(model.count), mirror = \(mirror.value)")

    for subscription in [names, tasks, binding] { subscription.cancel() }
}
