import Foundation
import StateKit
import StateKitInspector

// A program for the inspector's browser check (Scripts/inspector/check.py): it makes a few
// containers, starts the inspector, prints its URL, and then follows commands on standard input,
// one a line. Each change of "title" is printed as `title=<value>`, so the check sees an undo
// pressed on the page take effect here.
//
//   statekit-inspector-fixture --dir <directory>          serve, and follow commands
//   statekit-inspector-fixture --dir <directory> --write-shared <text>
//                                                          write the shared key from another process
//
// Commands: `title <text>`, `count`, `storm <seconds>` (about 10,000 writes a second),
// `stall <rounds>` (40 containers of 8 KB strings, each changed once a round, 10 ms apart; prints
// `stalled <slowest write in seconds>`, for a page that never reads), `quit`.

struct Profile: Codable, Equatable {
    var name: String
    var tags: [String]
}

/// A value that is not `Encodable`: the page shows its description.
final class Opaque: CustomStringConvertible {
    var description: String { "an opaque value" }
}

func argument(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

/// Writes `line` to standard output unbuffered, so the check reads it at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

guard let directory = argument("--dir").map({ URL(fileURLWithPath: $0) }) else {
    FileHandle.standardError.write(Data("usage: statekit-inspector-fixture --dir <directory>\n".utf8))
    exit(2)
}
let storage = FileStateStorage.file(directory, sharedAcrossProcesses: true)
let note = PersistedState("", key: "note", storage: storage)

if let text = argument("--write-shared") {
    note.modify(text)
    note.flush()
    exit(0)
}

let count = MonitoredState(0, key: "count")
let profile = MonitoredState(Profile(name: "Ada", tags: ["admin"]), key: "profile")
let title = MonitoredState("Draft", key: "title")
let opaque = State(Opaque(), key: "opaque")
let history = StateHistory(tracking: title, profile)
let titles = title.subscribe { say("title=\($0)") }
let notes = note.subscribe { say("note=\($0)") }

let inspector: StateInspector
do {
    inspector = try StateInspector.start()
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
say("URL \(inspector.url.absoluteString)")

while let line = readLine() {
    let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
    switch parts.first {
    case "title":
        title.modify(parts.count > 1 ? parts[1] : "")
    case "count":
        count.modify { $0 += 1 }
    case "storm":
        let seconds = parts.count > 1 ? Double(parts[1]) ?? 1 : 1
        let end = Date().addingTimeInterval(seconds)
        var writes = 0
        while Date() < end {
            for _ in 0..<100 { count.modify { $0 += 1 } }
            writes += 100
            usleep(10_000)
        }
        say("stormed \(writes)")
    case "stall":
        let rounds = parts.count > 1 ? Int(parts[1]) ?? 1 : 1
        let big = (0..<40).map { MonitoredState("", key: "big-\($0)") }
        let filler = String(repeating: "x", count: 8_000)
        var slowest: TimeInterval = 0
        for round in 1...max(rounds, 1) {
            for container in big {
                let started = Date()
                container.modify("\(round)" + filler)
                slowest = max(slowest, Date().timeIntervalSince(started))
            }
            usleep(10_000)
        }
        say("stalled \(slowest)")
    case "quit":
        inspector.stop()
        withExtendedLifetime((history, titles, notes, opaque)) {}
        say("stopped")
        exit(0)
    default:
        say("unknown command: \(line)")
    }
    say("ok")
}
inspector.stop()
withExtendedLifetime((history, titles, notes, opaque)) {}
