/// A deterministic random number generator (SplitMix64): the same seed gives the same sequence on every machine,
/// so a failing randomized test can be replayed from the seed it prints.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    /// The seed the generator started from.
    public let seed: UInt64
    private var state: UInt64

    /// Creates a generator from `seed`.
    public init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Reads a test size multiplier from the environment (for larger local runs of randomized tests), default 1.
public func testScale(_ variable: String = "CANOPY_TEST_SCALE") -> Int {
    guard let text = getenvString(variable), let value = Int(text), value > 0 else { return 1 }
    return value
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private func getenvString(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}
