import Foundation

/// An ``AnalyticsBackend`` that appends each event as one JSON object per line to a file.
///
/// Handy for development, for shipping events later, and for tests: each line is an
/// ``AnalyticsEvent`` encoded with sorted keys and ISO 8601 dates, so
/// ``events()`` (or any JSON-lines tool) reads them back.
///
/// ```swift
/// let backend = JSONLinesAnalyticsBackend(fileURL: URL.temporaryDirectory.appending(path: "events.jsonl"))
/// ```
///
/// - Note: All operations on `JSONLinesAnalyticsBackend` are thread-safe.
public struct JSONLinesAnalyticsBackend: AnalyticsBackend {
    /// The file the events are appended to; created with its directory when missing.
    public let fileURL: URL
    private let lock = Lock()

    /// Creates a backend appending to `fileURL`.
    public init(fileURL: URL) {
        self.fileURL = fileURL
    }

    /// Appends `events`, one line each.
    public func track(_ events: [AnalyticsEvent]) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        var data = Data()
        for event in events {
            data.append(try encoder.encode(event))
            data.append(0x0A)
        }
        try lock.withLock { try FileAppender.append(data, to: fileURL) }
    }

    /// The events in the file so far, in order.
    ///
    /// - Throws: An error if the file exists but cannot be read or holds a line that is not an event.
    public func events() throws -> [AnalyticsEvent] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let data = lock.withLock({ FileManager.default.contents(atPath: fileURL.path) }) else { return [] }
        return try data.split(separator: 0x0A).map { try decoder.decode(AnalyticsEvent.self, from: Data($0)) }
    }
}

/// Appends bytes to a file, creating it and its directory when missing.
enum FileAppender {
    static func append(_ data: Data, to url: URL) throws {
        let manager = FileManager.default
        if !manager.fileExists(atPath: url.path) {
            try manager.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            guard manager.createFile(atPath: url.path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
            }
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: data)
    }
}
