import Foundation
import StateKit

// A child process for StateKit's persistence tests: it writes and reads file-backed
// containers, so tests can kill it mid-write and check what the next process finds.
//
//   statekit-testhelper write <directory> <key> <string>   stores the string, flushes, exits
//   statekit-testhelper read <directory> <key>             prints the stored string
//   statekit-testhelper write-loop <directory> <key>       prints "loaded <n>", then stores
//                                                          [n+1, n+1, ...], [n+2, ...] forever,
//                                                          printing "flushed <n>" now and then
//   statekit-testhelper follow <directory> <key>           holds a String container on the key;
//                                                          prints "value <v>" for its current
//                                                          value and each change; reads lines
//                                                          from standard input: "set <v>" stores
//                                                          v and prints "set <v>", "show" prints
//                                                          "current <v>", "quit" exits
//   statekit-testhelper move <directory> <key> <previous>  prints "moving", opens an [Int]
//                                                          container on the key, moving it from
//                                                          the previous key, prints "moved
//                                                          <count>", then waits for standard
//                                                          input to end (so a test can kill it
//                                                          while it surely lives)
//   statekit-testhelper shared-… <directory> <key> …       storage shared across processes; see
//                                                          SharedCommands.swift
//   statekit-testhelper key-… <directory> <key> …          keys declared once; see KeyCommands.swift

func line(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.count >= 3, runSharedCommand(arguments) || runKeyCommand(arguments) { exit(0) }
guard arguments.count >= 3 else {
    line("usage: statekit-testhelper write|read|write-loop|follow|move <directory> <key> [value|previous]")
    exit(2)
}
let storage = FileStateStorage.file(URL(fileURLWithPath: arguments[1], isDirectory: true))
let key = arguments[2]

switch arguments[0] {
case "write" where arguments.count == 4:
    let state = PersistedState("", key: key, storage: storage)
    state.modify(arguments[3])
    state.flush()
    line("wrote")
case "read":
    line(PersistedState("", key: key, storage: storage).value)
case "write-loop":
    let state = PersistedState([Int](), key: key, storage: storage)
    var counter = state.value.first ?? 0
    line("loaded \(counter)")
    while true {
        counter += 1
        state.modify(Array(repeating: counter, count: 2_000))
        if counter % 100 == 0 {
            state.flush()
            line("flushed \(counter)")
        }
    }
case "follow":
    let state = PersistedState("", key: key, storage: storage)
    let subscription = state.subscribe { line("value \($0)") }
    while let command = readLine() {
        if command.hasPrefix("set ") {
            let value = String(command.dropFirst(4))
            state.modify(value)
            state.flush()
            line("set \(value)")
        } else if command == "show" {
            line("current \(state.value)")
        } else if command == "quit" {
            break
        }
    }
    subscription.cancel()
case "move" where arguments.count == 4:
    line("moving")
    let state = PersistedState([Int](), key: key, storage: storage, previousKeys: [arguments[3]])
    line("moved \(state.value.count)")
    while readLine() != nil {}
default:
    line("unknown command \(arguments[0])")
    exit(2)
}
