//: # Exclusive states with enums
//:
//: John Sundell's "Modelling state in Swift": one enum per exclusive state, rendered reactively,
//: and computed properties to extract what one state carries. In StateKit the enum lives in a
//: container, rendering is a subscription, and a computed property is a read-only projection.
import StateKit

struct DownloadTask: Equatable, Sendable {
    let id: Int
}

struct PlaybackState: Equatable, Sendable {
    let file: String
    var progress: Double
}

struct Video: Equatable, Sendable {
    enum State: Equatable, Sendable {
        case willDownload(from: String)
        case downloading(task: DownloadTask)
        case playing(PlaybackState)
        case paused(PlaybackState)
    }

    var state: State
}

extension Video {
    /// Sundell's query: the ongoing download task, if any.
    var downloadTask: DownloadTask? {
        guard case .downloading(let task) = state else { return nil }
        return task
    }
}

let video = MonitoredState(Video(state: .willDownload(from: "https://example.com/video.mp4")), key: "video")

//: Render from the single source of truth: every change re-renders the action button.
func actionButtonImage(for state: Video.State) -> String {
    switch state {
    case .willDownload: "wait"
    case .downloading: "cancel"
    case .playing: "pause"
    case .paused: "play"
    }
}

let rendering = video.state.subscribe { print("action button: \(actionButtonImage(for: $0))") }

//: `video.downloadTask` is a projection of a computed property: it can be observed, and it
//: notifies only when the task itself changes, but writing to it does not compile.
let downloads = video.downloadTask.subscribe { print("download task: \($0.map { "#\($0.id)" } ?? "none")") }

video.state ~> .downloading(task: DownloadTask(id: 1))
video.state ~> .playing(PlaybackState(file: "video.mp4", progress: 0))
video.state ~> { state in
    if case .playing(var playback) = state {
        playback.progress = 0.5
        state = .paused(playback)
    }
}

//: Cancel a download without a `switch`:
if let task = video.downloadTask.value {
    print("cancelling #\(task.id)")
} else {
    print("nothing to cancel")
}
