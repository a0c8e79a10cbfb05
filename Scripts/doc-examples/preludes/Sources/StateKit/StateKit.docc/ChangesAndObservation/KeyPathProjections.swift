// Hidden setup for the examples of KeyPathProjections.md (see Scripts/check-doc-examples.sh).
struct User: Equatable, Sendable { var name: String; var visits: Int }
struct AppModel: Equatable, Sendable { var user: User; var theme: String }
let app = MonitoredState(AppModel(user: User(name: "Ann", visits: 0), theme: "light"), key: "app")

struct DownloadTask: Equatable, Sendable { var progress: Double }
enum VideoState: Equatable, Sendable {
    case idle
    case downloading(DownloadTask)
}
struct Video: Equatable, Sendable { var state: VideoState }
let video = MonitoredState(Video(state: .idle), key: "video")
