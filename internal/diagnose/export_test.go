package diagnose

// SQLJSON is sqlJSON, for TestSQLJSONIsDuckDBs.
var SQLJSON = sqlJSON
