/// Points where StateKit's own fault tests steer a child process (`statekit-testhelper`, which
/// sets them for its command at launch); apps never set them, and they are not public API. Set
/// them before any container is made.
package enum SharedKeyHooks {
    /// Called by a commit over several shared keys once it replaced its first file, holding every
    /// key: a test kills the process there.
    package nonisolated(unsafe) static var afterFirstReplace: (() -> Void)?
    /// How many times a write catches up with other processes' changes before taking the key
    /// however far behind it is (``SharedWriteGate``): a test sets 0 to reach that path on every
    /// write that finds the journal moved.
    package nonisolated(unsafe) static var catchUpsBeforeTakingIn = 10
}
