/// Thrown when a recorder or a ``RecordingSink`` did not receive what a test waited for in time.
///
/// Its ``description`` names the key, how many elements the test waited for, and everything that
/// did arrive, so a failing test says what happened instead of just "timed out":
///
/// ```
/// timed out after 1.0 seconds waiting for 2 new values of 'app.user.name': got 1 (["Tim"]);
/// all values recorded: ["Ann", "Tim"]
/// ```
public struct RecordingTimeoutError: Error, CustomStringConvertible, Sendable {
    /// The key of the container, projection or changes waited on.
    public let key: String
    /// How many new elements the test waited for.
    public let expectedCount: Int
    /// How long it waited.
    public let timeout: Duration
    /// The new elements that did arrive, described; fewer than ``expectedCount``.
    public let received: [String]
    /// Everything recorded so far, described, including what earlier waits consumed.
    public let recorded: [String]
    /// What was waited for, such as `"values"` or `"changes"`.
    public let elementName: String

    /// Creates an error describing a wait that ran out of time.
    public init(
        key: String,
        expectedCount: Int,
        timeout: Duration,
        received: [String],
        recorded: [String],
        elementName: String
    ) {
        self.key = key
        self.expectedCount = expectedCount
        self.timeout = timeout
        self.received = received
        self.recorded = recorded
        self.elementName = elementName
    }

    /// Names the key, the count waited for, and what arrived.
    public var description: String {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let list = { (items: [String]) in "[" + items.joined(separator: ", ") + "]" }
        return "timed out after \(seconds) seconds waiting for \(expectedCount) new \(elementName) of '\(key)': "
            + "got \(received.count) (\(list(received))); all \(elementName) recorded: \(list(recorded))"
    }
}

/// How a recorded element appears in a ``RecordingTimeoutError``.
func describe(_ element: some Any) -> String {
    String(reflecting: element)
}
