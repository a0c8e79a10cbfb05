import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `statekit-testhelper` executable run as a child process, with its standard output read
/// line by line (reads block until the child writes, so no test sleeps).
final class TestHelperProcess {
    let process = Process()
    private let output = Pipe()
    private let input = Pipe()
    private var buffer = Data()

    /// The environment children run with: this process's, without Swift's backtracer. After a
    /// crash it runs as a process of its own that holds the child's standard error; under the
    /// thread sanitizer one outlived its child by minutes, and a test reading that output to its
    /// end waited as long, holding one of the pool's threads.
    static var environment: [String: String] {
        ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
    }

    /// Starts `executable` with `arguments` and ``environment``, its output and errors piped.
    static func start(_ executable: URL, _ arguments: [String]) throws -> (process: Process, output: Pipe, errors: Pipe)
    {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        return (process, output, errors)
    }

    init(_ arguments: [String]) throws {
        process.executableURL = try Self.executableURL()
        process.arguments = arguments
        process.environment = Self.environment
        process.standardOutput = output
        process.standardInput = input
        try process.run()
    }

    /// How long a child of a cross-process test may take before it is killed and the test fails.
    static let bound: Double = isThreadSanitized ? 240 : 120

    /// Starts the helper with `arguments`, killed if it still runs after ``bound``: a test waiting
    /// for its output then fails instead of hanging.
    static func watched(_ arguments: [String]) throws -> TestHelperProcess {
        let child = try TestHelperProcess(arguments)
        child.killIfRunning(after: bound)
        return child
    }

    /// Starts `count` children (``watched(_:)``), child `index` with `arguments(index)`, waits
    /// until each printed "ready", and lets them all go at once.
    static func startTogether(
        _ count: Int, sourceLocation: SourceLocation = #_sourceLocation, _ arguments: (Int) -> [String]
    ) throws -> [TestHelperProcess] {
        let children = try (0..<count).map { try watched(arguments($0)) }
        for child in children { #expect(child.nextLine() == "ready", sourceLocation: sourceLocation) }
        for child in children { child.send("go") }
        return children
    }

    /// Kills the child if it still runs after `seconds`.
    func killIfRunning(after seconds: Double) {
        let watchdog = DispatchWorkItem { [self] in if process.isRunning { kill() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: watchdog)
    }

    /// Writes `text` and a newline to the child's standard input.
    func send(_ text: String) {
        input.fileHandleForWriting.write(Data((text + "\n").utf8))
    }

    /// The next line the child printed that starts with `prefix`, skipping others; `nil` once
    /// the child closed its output.
    func nextLine(startingWith prefix: String) -> String? {
        while let line = nextLine() {
            if line.hasPrefix(prefix) { return line }
        }
        return nil
    }

    /// Runs the helper to completion, with `input` as its first line if given, and returns its
    /// output lines.
    static func run(_ arguments: [String], input: String? = nil) throws -> [String] {
        let helper = try TestHelperProcess(arguments)
        if let input { helper.send(input) }
        var lines: [String] = []
        while let line = helper.nextLine() { lines.append(line) }
        #expect(helper.waitForExit() && helper.process.terminationStatus == 0)
        return lines
    }

    /// The next line the child printed, or `nil` once it closed its output.
    func nextLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }

    /// Sends SIGKILL and waits (10 s at most) for the child to be gone.
    func kill() {
        #if canImport(Glibc)
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        #else
        _ = Darwin.kill(process.processIdentifier, SIGKILL)
        #endif
        _ = hasExited(process, within: 10)
    }

    /// Waits for the child to exit, ``bound`` at most (``hasExited(_:within:)``), and returns
    /// whether it did; one still running records an issue. Read `terminationStatus` only after it
    /// returned `true`: reading a running process's status stops the tests.
    @discardableResult
    func waitForExit(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let isGone = hasExited(process, within: Self.bound)
        #expect(isGone, "the helper still runs after \(Self.bound) s", sourceLocation: sourceLocation)
        return isGone
    }

    /// The helper built next to the test bundle (`swift test` builds it: the test target
    /// depends on it), or under the package's `.build/debug`.
    static func executableURL() throws -> URL {
        var directories: [URL] = []
        if let executable = Bundle.main.executableURL { directories.append(executable.deletingLastPathComponent()) }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        directories.append(packageRoot.appendingPathComponent(".build/debug"))
        for directory in directories {
            let candidate = directory.appendingPathComponent("statekit-testhelper")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw HelperNotFound(searched: directories.map(\.path))
    }

    struct HelperNotFound: Error, CustomStringConvertible {
        let searched: [String]
        var description: String { "statekit-testhelper not found in \(searched)" }
    }
}

/// A new, empty temporary directory, removed by `cleanUp()`.
struct TemporaryDirectory {
    let url: URL

    init(_ name: String = #function) {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent(
                "StateKitTests-\(name.prefix { $0 != "(" })-\(UUID().uuidString)", isDirectory: true)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(at: url)
    }

    /// The names of the files in the directory.
    var fileNames: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
    }
}
