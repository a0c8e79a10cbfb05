/// Thrown by ``checkStateSinkContract(_:sampleValues:received:)`` and
/// ``checkStateStorageContract(_:)`` when an implementation breaks its protocol's contract.
///
/// Its ``description`` lists every failed requirement, so one run says everything that is wrong:
///
/// ```
/// StateStorage contract: 1 of 11 requirements failed for file:///tmp/settings/:
/// - keys map injectively: 'a/b' and 'a_b' read each other's bytes
/// ```
public struct ContractViolation: Error, CustomStringConvertible, Sendable {
    /// Which contract, such as `"StateSink"`.
    public let contract: String
    /// What was checked: the sink's name or the storage's location.
    public let subject: String
    /// One line per failed requirement.
    public let failures: [String]
    /// How many requirements were checked.
    public let checked: Int

    /// Creates a violation report.
    public init(contract: String, subject: String, failures: [String], checked: Int) {
        self.contract = contract
        self.subject = subject
        self.failures = failures
        self.checked = checked
    }

    /// The contract, the subject and every failed requirement, one a line.
    public var description: String {
        "\(contract) contract: \(failures.count) of \(checked) requirements failed for \(subject):\n"
            + failures.map { "- \($0)" }.joined(separator: "\n")
    }
}

/// Collects the outcome of each requirement a contract check tests.
struct ContractReport {
    let contract: String
    var subject: String
    private(set) var failures: [String] = []
    private(set) var checked = 0

    init(contract: String, subject: String) {
        self.contract = contract
        self.subject = subject
    }

    /// Records one requirement: `failure` is `nil` when it holds.
    mutating func require(_ failure: String?) {
        checked += 1
        if let failure { failures.append(failure) }
    }

    /// Records one requirement checked by a throwing body: a thrown error is a failure too.
    mutating func require(_ requirement: String, _ body: () async throws -> String?) async {
        do {
            require(try await body())
        } catch {
            require("\(requirement): threw \(error)")
        }
    }

    func finish() throws {
        guard failures.isEmpty else {
            throw ContractViolation(contract: contract, subject: subject, failures: failures, checked: checked)
        }
    }
}
