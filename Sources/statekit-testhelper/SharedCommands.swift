import Foundation
import StateKit

// The commands for file storage shared across processes (issue 44). Each opens the key in
// `FileStateStorage.file(directory, sharedAcrossProcesses: true)`, or `false` when the command
// ends in `-unshared` (the same run against today's storage):
//
//   shared-increment <directory> <key> <count>  prints "ready", waits for a line on standard input,
//                                               adds 1 <count> times (modify, then ~> by turns),
//                                               prints "done <value>"
//   shared-append <directory> <key> <count> <tag>  as shared-increment, appending "<tag>-<i>" to
//                                               the entries of a `SharedLog` struct
//   shared-hold <directory> <key>               prints "ready", waits for a line, then adds 1 in a
//                                               modify body that prints "inside <value before>"
//                                               and never returns (a test kills it there)
//   shared-watch <directory> <key>              prints "value <v>" for the Int's current value and
//                                               each change, until standard input ends
//   shared-transaction <directory> <key>        adds 1 inside withStateTransaction (refused)

/// A structured value several processes append to.
struct SharedLog: Codable, Sendable {
    var title = "log"
    var entries: [String] = []
}

/// Runs a `shared-…` command; `false` if `arguments` is not one.
func runSharedCommand(_ arguments: [String]) -> Bool {
    guard arguments[0].hasPrefix("shared-"), arguments.count >= 3 else { return false }
    let isShared = !arguments[0].hasSuffix("-unshared")
    let command = isShared ? arguments[0] : String(arguments[0].dropLast("-unshared".count))
    let storage = FileStateStorage.file(
        URL(fileURLWithPath: arguments[1], isDirectory: true), sharedAcrossProcesses: isShared)
    let key = arguments[2]
    switch command {
    case "shared-increment" where arguments.count == 4:
        let count = PersistedState(0, key: key, storage: storage)
        line("ready")
        _ = readLine()
        for index in 0..<(Int(arguments[3]) ?? 0) {
            if index.isMultiple(of: 2) {
                count.modify { $0 += 1 }
            } else {
                count ~> { $0 += 1 }
            }
        }
        count.flush()
        line("done \(count.value)")
    case "shared-append" where arguments.count == 5:
        let log = PersistedState(SharedLog(), key: key, storage: storage)
        line("ready")
        _ = readLine()
        for index in 0..<(Int(arguments[3]) ?? 0) {
            log.modify { $0.entries.append("\(arguments[4])-\(index)") }
        }
        log.flush()
        line("done \(log.value.entries.count)")
    case "shared-hold":
        let count = PersistedState(0, key: key, storage: storage)
        line("ready")
        _ = readLine()
        count.modify { value in
            line("inside \(value)")
            value += 1
            while true { sleep(60) }
        }
    case "shared-watch":
        let count = PersistedState(0, key: key, storage: storage)
        let subscription = count.subscribe { line("value \($0)") }
        while readLine() != nil {}
        subscription.cancel()
    case "shared-transaction":
        let count = PersistedState(0, key: key, storage: storage)
        line("ready")
        withStateTransaction { count.modify { $0 += 1 } }
        count.flush()
        line("done \(count.value)")
    default:
        return false
    }
    return true
}
