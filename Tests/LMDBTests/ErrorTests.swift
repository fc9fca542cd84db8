import CanopyTestSupport
import LMDB
import Testing

@Suite struct ErrorTests {
    /// Every named code with the value from `lmdb.h` (LMDB 0.9) or Linux's `errno.h`.
    static let codes: [(LMDBError.Code, Int32)] = [
        (.keyExists, -30799), (.notFound, -30798), (.pageNotFound, -30797), (.corrupted, -30796),
        (.panic, -30795), (.versionMismatch, -30794), (.invalid, -30793), (.mapFull, -30792),
        (.databasesFull, -30791), (.readersFull, -30790), (.threadLocalStorageFull, -30789),
        (.transactionFull, -30788), (.cursorFull, -30787), (.pageFull, -30786), (.mapResized, -30785),
        (.incompatible, -30784), (.badReaderSlot, -30783), (.badTransaction, -30782), (.badValueSize, -30781),
        (.badDatabase, -30780),
        (.noSuchFile, 2), (.permissionDenied, 13), (.readOnlyFileSystem, 30), (.invalidArgument, 22),
        (.noSpace, 28), (.outOfMemory, 12), (.ioError, 5), (.busy, 16),
    ]

    @Test(arguments: codes)
    func codeHasTheLibraryValue(code: LMDBError.Code, rawValue: Int32) {
        #expect(code.rawValue == rawValue)
        #expect(LMDBError.Code(rawValue: rawValue) == code)
        #expect(!code.description.isEmpty)
        // LMDB's own codes describe themselves by name.
        if rawValue < 0 { #expect(code.description.hasPrefix("MDB_")) }
    }

    /// Every code a caller can meet says what to do (`MDB_NOTFOUND` is an answer, not a failure; `EINVAL` has no one
    /// remedy).
    @Test(arguments: codes.map(\.0).filter { $0 != .notFound && $0 != .invalidArgument })
    func errorsSayWhatToDo(code: LMDBError.Code) {
        let error = makeError(code.rawValue, "mdb_put", path: "/data/store", database: "people")
        #expect(error.hint?.isEmpty == false, "\(code)")
        #expect(error.description.hasSuffix(". \(error.hint ?? "")"))
    }

    @Test func codesAreDistinct() {
        #expect(Set(Self.codes.map(\.0)).count == Self.codes.count)
    }

    @Test func codeDescriptionsComeFromLMDB() {
        #expect(LMDBError.Code.notFound.description == "MDB_NOTFOUND: No matching key/data pair found")
        #expect(LMDBError.Code.noSuchFile.description == "No such file or directory")
        #expect(LMDBError.Code(rawValue: 12345).rawValue == 12345)
    }

    @Test func descriptionNamesOperationCodeDatabasePathAndHint() {
        let full = LMDBError(
            code: .keyExists, operation: "mdb_put", path: "/data/store", database: "people", hint: "Use put instead.")
        #expect(full.description == "mdb_put failed: \(LMDBError.Code.keyExists.description) (-30799), "
            + "database 'people', at /data/store. Use put instead.")
        let bare = LMDBError(code: .busy, operation: "mdb_env_set_mapsize")
        #expect(bare.description == "mdb_env_set_mapsize failed: \(LMDBError.Code.busy.description) (16)")
        #expect(bare.path == nil && bare.database == nil && bare.hint == nil)
    }

    @Test func errorsAreComparableValues() {
        let error = LMDBError(code: .mapFull, operation: "mdb_put", path: "/p")
        #expect(error == LMDBError(code: .mapFull, operation: "mdb_put", path: "/p"))
        #expect(error != LMDBError(code: .mapFull, operation: "mdb_txn_commit", path: "/p"))
        #expect(error.code != .mapResized)
    }

    @Test func errorsFromLMDBCarryTheirContext() throws {
        try withEnvironment(.init(maxDatabases: 1)) { env, directory in
            let table = try env.openDatabase(named: "people", create: true)
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: table) }

            var errors: [LMDBError] = []
            func collect(_ body: () throws -> Void) {
                do { try body() } catch let error as LMDBError { errors.append(error) } catch {
                    Issue.record("Unexpected error \(error)")
                }
            }
            collect { try env.write { txn in try txn.put(bytes("w"), forKey: bytes("k"), in: table, flags: .noOverwrite) } }
            collect { try env.write { txn in try txn.put(bytes("w"), forKey: [], in: table) } }
            collect { _ = try env.openDatabase(named: "more", create: true) }
            collect { try env.read { _ in try env.setMapSize(1 << 30) } }
            collect { try env.copy(to: directory.appending("missing")) }

            #expect(errors.map(\.code) == [.keyExists, .badValueSize, .databasesFull, .busy, .noSuchFile])
            #expect(errors.map(\.operation) == [
                "mdb_put", "mdb_put", "mdb_dbi_open", "mdb_env_set_mapsize", "mdb_env_copy2",
            ])
            #expect(errors.map(\.database) == ["people", "people", "more", nil, nil])
            for error in errors {
                #expect(error.path == env.path)
                #expect(error.description.contains(error.operation))
                #expect(error.description.contains(env.path))
            }
            #expect(errors[0].description.contains("database 'people'"))
        }
    }

    @Test func callersCanSwitchOnTheCode() throws {
        try withEnvironment { env, _ in
            let main = try env.openDatabase(named: nil)
            try env.write { txn in try txn.put(bytes("v"), forKey: bytes("k"), in: main) }
            var existed = false
            do {
                try env.write { txn in try txn.put(bytes("w"), forKey: bytes("k"), in: main, flags: .noOverwrite) }
            } catch let error as LMDBError where error.code == .keyExists {
                existed = true
            }
            #expect(existed)
        }
    }
}
