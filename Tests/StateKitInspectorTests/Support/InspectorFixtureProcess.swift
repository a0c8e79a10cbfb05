import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `statekit-inspector-fixture` program run as a child process: an app with a few containers
/// and an inspector, driven by commands on its standard input.
///
/// The tests that open a page or read the whole state run against it, not against the test
/// process: there a page would make every container of every test running beside it count its
/// changes, and `/api/state` would read them all.
final class InspectorFixtureProcess {
    let process = Process()
    let url: URL
    let port: UInt16
    let token: String
    private let input = Pipe()
    private let output = Pipe()
    private let directory: URL
    private var buffer = Data()

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "StateKitInspectorTests-\(UUID().uuidString)", isDirectory: true)
        process.executableURL = try Self.executableURL()
        process.arguments = ["--dir", directory.path]
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let watchdog = DispatchWorkItem { [process] in
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: watchdog)
        guard let line = Self.nextLine(from: output, buffer: &buffer, startingWith: "URL "),
            let url = URL(string: String(line.dropFirst("URL ".count))),
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let token = components.queryItems?.first(where: { $0.name == "token" })?.value,
            let port = url.port
        else {
            kill(process.processIdentifier, SIGKILL)
            throw FixtureFailed()
        }
        self.url = url
        self.token = token
        self.port = UInt16(port)
    }

    /// Closes the program's input, which ends it; kills it if it has not ended within 10 s, and
    /// waits 10 s more at most. Never `Process.waitUntilExit()`: beside the other test target's
    /// children, it once missed the killed program's exit and waited for ever, and the whole run
    /// with it.
    deinit {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            let killed = Date().addingTimeInterval(10)
            while process.isRunning && Date() < killed { usleep(10_000) }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Sends a command and returns the lines it printed before its `ok`.
    @discardableResult
    func send(_ command: String) -> [String] {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
        var lines: [String] = []
        while let line = Self.nextLine(from: output, buffer: &buffer, startingWith: "") {
            if line == "ok" { break }
            lines.append(line)
        }
        return lines
    }

    /// The next line the child printed that starts with `prefix`; `nil` once its output closed.
    func nextLine(startingWith prefix: String) -> String? {
        Self.nextLine(from: output, buffer: &buffer, startingWith: prefix)
    }

    private static func nextLine(from pipe: Pipe, buffer: inout Data, startingWith prefix: String) -> String? {
        while true {
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                if line.hasPrefix(prefix) { return line }
            }
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }

    /// The program built next to the test bundle (the test target depends on it), or under the
    /// package's `.build/debug`.
    private static func executableURL() throws -> URL {
        var directories: [URL] = []
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        if let executable = Bundle.main.executableURL { directories.append(executable.deletingLastPathComponent()) }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        directories.append(packageRoot.appendingPathComponent(".build/debug"))
        for directory in directories {
            let candidate = directory.appendingPathComponent("statekit-inspector-fixture")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw FixtureFailed()
    }

    struct FixtureFailed: Error, CustomStringConvertible {
        var description: String { "statekit-inspector-fixture did not start and print its URL" }
    }
}
